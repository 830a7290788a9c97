"""Sandboxed WebAssembly filters end to end (issue 7): modules registered at
run time with `facet ctl filter create`, used by policies, exercised with
boto3 against the session's `facet serve`.

The modules come from `make wasm-examples` (bin/wasm, or $FACET_WASM_DIR):
the examples of examples/filters and the hostile test module of
internal/filter/wasm/testdata/hostile. Filter names carry a random suffix,
and each test's policies name only its own tenant, so the tests share the
session's server without seeing each other.
"""

import json
import os
import random
import re
import threading
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from conftest import REPO, make_client

WASM_DIR = Path(os.environ.get("FACET_WASM_DIR", REPO / "bin" / "wasm"))


def module(name):
    p = WASM_DIR / f"{name}.wasm"
    if not p.is_file():
        pytest.fail(f"{p} does not exist: run `make wasm-examples` (make test does) or set FACET_WASM_DIR")
    return str(p)


def uniq(prefix):
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def ctl_json(server, *args):
    return json.loads(server.ctl(*args, "-o", "json"))


def ctl_fails(server, *args):
    try:
        server.ctl(*args)
    except RuntimeError as e:
        return str(e)
    raise AssertionError(f"facet ctl {' '.join(args)} succeeded")


def create_filter(server, name, wasm, *flags):
    out = ctl_json(server, "filter", "create", name, "--wasm", module(wasm), *flags)
    assert out["name"] == name and out["kind"] == "wasm", out
    return out


def policy(server, text):
    return json.loads(server.ctl("policy", "add", text, "-o", "json"))["policies"]


def new_bucket(s3):
    name = "w-" + uuid.uuid4().hex[:16]
    s3.create_bucket(Bucket=name)
    return name


def admin_get(server, path):
    req = urllib.request.Request(f"http://{server.admin_addr}{path}", headers={"Authorization": "Bearer " + server.token})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def stored_files_containing(server, needle):
    """Files under the data directory whose bytes contain needle."""
    hits = []
    for p in Path(server.data_dir).rglob("*"):
        if p.is_file() and p.stat().st_size >= len(needle):
            if needle in p.read_bytes():
                hits.append(p)
    return hits


def test_redaction_for_one_bucket(server, tenant, s3):
    name = uniq("redact")
    create_filter(server, name, "redact", "--methods", "PUT", "--stages", "gateway",
                  "--doc", "masks e-mail addresses and card numbers")
    masked, plain = new_bucket(s3), new_bucket(s3)
    policy(server, f"FOR BUCKET {tenant['tenant']}/{masked} DO SET {name}")
    text = b"order 17 by alice@example.com paid with 4111 1111 1111 1111\nno secrets here\n"
    for b in (masked, plain):
        s3.put_object(Bucket=b, Key="orders.txt", Body=text)
    got = s3.get_object(Bucket=masked, Key="orders.txt")["Body"].read()
    assert got == b"order 17 by [email] paid with [card]\nno secrets here\n", got
    assert s3.get_object(Bucket=plain, Key="orders.txt")["Body"].read() == text


def test_reversible_xor_stores_obfuscated_bytes(server, tenant, s3):
    name = uniq("xor")
    create_filter(server, name, "xor", "--methods", "PUT,GET", "--stages", "gateway,storage", "--reversible",
                  "--param", "key:string:k3y")
    b = new_bucket(s3)
    policy(server, f"FOR BUCKET {tenant['tenant']}/{b} DO SET {name} WITH key=s3cr3t-key")
    body = random.Random(7).randbytes(300_000) + b"FACET-XOR-MARKER-" + uuid.uuid4().hex.encode()
    s3.put_object(Bucket=b, Key="blob", Body=body)
    key = b"s3cr3t-key"
    xored = bytes(c ^ key[i % len(key)] for i, c in enumerate(body))
    marker = body[-40:]
    assert stored_files_containing(server, xored[-40:]), "the obfuscated bytes are not on disk"
    assert not stored_files_containing(server, marker), "the plaintext reached the disk"
    assert s3.get_object(Bucket=b, Key="blob")["Body"].read() == body
    rng = s3.get_object(Bucket=b, Key="blob", Range="bytes=1000-1999")["Body"].read()
    assert rng == body[1000:2000]

    # Version 2 runs other code; the object written by version 1 is still
    # undone by version 1's module, and a new object by version 2's.
    out = ctl_json(server, "filter", "update", name, "--wasm", module("noop"))
    assert out["version"] == 2, out
    assert s3.get_object(Bucket=b, Key="blob")["Body"].read() == body
    s3.put_object(Bucket=b, Key="blob2", Body=body)
    assert stored_files_containing(server, marker), "version 2 (noop) should store the plaintext"
    assert s3.get_object(Bucket=b, Key="blob2")["Body"].read() == body
    # Deleting a reversible filter takes --force, and policies must go first.
    assert "FilterConflict" in ctl_fails(server, "filter", "delete", name)


def test_rust_module(server, tenant, s3):
    p = WASM_DIR / "rust-noop.wasm"
    if not p.is_file():
        pytest.skip("the Rust example was not built here: no rustc with the wasm32-wasip1 target (make wasm-examples says so)")
    name = uniq("rxor")
    create_filter(server, name, "rust-noop", "--methods", "PUT", "--stages", "gateway", "--reversible",
                  "--param", "key:string:")
    b = new_bucket(s3)
    policy(server, f"FOR BUCKET {tenant['tenant']}/{b} DO SET {name} WITH key=rust")
    body = b"written through a Rust module " * 1000
    s3.put_object(Bucket=b, Key="r", Body=body)
    assert stored_files_containing(server, bytes(c ^ b"rust"[i % 4] for i, c in enumerate(body))[:200])
    assert s3.get_object(Bucket=b, Key="r")["Body"].read() == body


def test_csv_column_dropper(server, tenant, s3):
    name = uniq("csvdrop")
    create_filter(server, name, "csvdrop", "--methods", "PUT", "--stages", "gateway",
                  "--param", "columns:string:", "--param", "header:bool:true")
    b = new_bucket(s3)
    policy(server, f"FOR BUCKET {tenant['tenant']}/{b} DO SET {name} WITH columns=\"email,2\"")
    csv = b'id,name,email,city\n1,Ann,ann@example.com,Lyon\n2,"Bob, Jr.",bob@example.com,"New\nYork"\n'
    s3.put_object(Bucket=b, Key="people.csv", Body=csv)
    got = s3.get_object(Bucket=b, Key="people.csv")["Body"].read()
    assert got == b'id,city\n1,Lyon\n2,"New\nYork"\n', got


def test_dependency_mounted_read_only(server, tenant, s3, tmp_path):
    dep = uniq("dict")
    f = tmp_path / "words.txt"
    f.write_bytes(b"alpha\nbeta\ngamma\n")
    out = ctl_json(server, "filter", "dependency", "create", dep, "--file", str(f), "--owner", tenant["tenant"])
    assert out["name"] == dep and out["size"] == 17, out
    name = uniq("hostile")
    create_filter(server, name, "hostile", "--methods", "PUT", "--stages", "gateway", "--owner", tenant["tenant"],
                  "--param", "mode:string:", "--param", "arg:string:", "--dependency", dep)
    b = new_bucket(s3)
    policy(server, f"FOR BUCKET {tenant['tenant']}/{b} DO SET {name} WITH mode=dep, arg={dep}")
    s3.put_object(Bucket=b, Key="k", Body=b"ignored")
    assert s3.get_object(Bucket=b, Key="k")["Body"].read() == b"alpha\nbeta\ngamma\n"
    # Nothing but the dependencies is visible: no way out of /deps.
    b2 = new_bucket(s3)
    policy(server, f'FOR BUCKET {tenant["tenant"]}/{b2} DO SET {name} WITH mode=dep, arg="../etc/passwd"')
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=b2, Key="k", Body=b"x")
    assert e.value.response["Error"]["Code"] == "FilterFailed"
    # A dependency a filter declares cannot be deleted.
    assert "FilterConflict" in ctl_fails(server, "filter", "dependency", "delete", dep)


def test_tenant_cannot_use_or_see_another_tenants_filter(server, tenant, other_tenant):
    name = uniq("private")
    create_filter(server, name, "noop", "--methods", "PUT", "--stages", "gateway", "--owner", tenant["tenant"])
    err = ctl_fails(server, "policy", "add", f"FOR TENANT {other_tenant['tenant']} DO SET {name}")
    assert f"filter {name} belongs to tenant {tenant['tenant']}" in err, err
    err = ctl_fails(server, "policy", "add", f"FOR ALL DO SET {name}")
    assert "belongs to tenant" in err, err
    policy(server, f"FOR TENANT {tenant['tenant']} DO SET {name}")  # its owner may

    def listed(t):
        return {f["name"] for f in ctl_json(server, "filter", "list", "--tenant", t)["filters"]}

    assert name in listed(tenant["tenant"])
    assert name not in listed(other_tenant["tenant"])
    assert "noop" in listed(other_tenant["tenant"])  # native filters are everyone's
    status, _ = admin_get(server, f"/v1/filters/{name}?tenant={other_tenant['tenant']}")
    assert status == 404
    status, _ = admin_get(server, f"/v1/filters/{name}?tenant={tenant['tenant']}")
    assert status == 200
    # An administrator's filter (no owner) is the marketplace: everyone's.
    shared = uniq("shared")
    create_filter(server, shared, "noop", "--methods", "PUT", "--stages", "gateway")
    policy(server, f"FOR TENANT {other_tenant['tenant']} DO SET {shared}")
    assert shared in listed(other_tenant["tenant"])


HOSTILE = {
    # mode: (reason as the S3 error message says it)
    "loop": "deadline exceeded",
    "alloc": "memory limit exceeded",
    "flood": "output limit exceeded",
    "trap": "trapped",
    "open": "exited with non-zero status",
    "write": "exited with non-zero status",
    "socket": "exited with non-zero status",
}


def test_hostile_modules_fail_alone(server, tenant, s3, other_tenant):
    name = uniq("hostile")
    create_filter(server, name, "hostile", "--methods", "PUT", "--stages", "gateway", "--owner", tenant["tenant"],
                  "--param", "mode:string:", "--param", "arg:string:")
    buckets = {}
    for mode in HOSTILE:
        buckets[mode] = new_bucket(s3)
        policy(server, f"FOR BUCKET {tenant['tenant']}/{buckets[mode]} DO SET {name} WITH mode={mode}")

    # Another tenant's client keeps writing and reading all along.
    other = make_client(server.endpoint, other_tenant)
    ob = new_bucket(other)
    stop, served, failures = threading.Event(), [0], []

    def bystander():
        i = 0
        while not stop.is_set():
            body = f"bystander {i}".encode() * 100
            try:
                other.put_object(Bucket=ob, Key=f"k{i % 8}", Body=body)
                assert other.get_object(Bucket=ob, Key=f"k{i % 8}")["Body"].read() == body
                served[0] += 1
            except Exception as e:  # noqa: BLE001 - any failure is the test's failure
                failures.append(repr(e))
            i += 1

    t = threading.Thread(target=bystander)
    t.start()
    try:
        for mode, reason in HOSTILE.items():
            with pytest.raises(ClientError) as e:
                s3.put_object(Bucket=buckets[mode], Key="x", Body=b"some input " * 100)
            err = e.value.response["Error"]
            assert err["Code"] == "FilterFailed", (mode, err)
            assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 422
            assert name in err["Message"] and reason in err["Message"], (mode, err["Message"])
            # Nothing was stored.
            with pytest.raises(ClientError):
                s3.head_object(Bucket=buckets[mode], Key="x")
    finally:
        stop.set()
        t.join()
    assert not failures, failures[:3]
    assert served[0] > 0
    # The server is still healthy and counts the failures per filter.
    status, body = admin_get(server, "/metrics")
    assert status == 200
    text = body.decode()
    for reason in ("timeout", "memory", "output", "trap", "exit"):
        assert re.search(rf'facet_filter_failures_total\{{filter="{name}",reason="{reason}"\}} [1-9]', text), reason


def test_64_concurrent_invocations(server, tenant, s3):
    name = uniq("xor64")
    create_filter(server, name, "xor", "--methods", "PUT", "--stages", "gateway", "--reversible",
                  "--param", "key:string:k")
    b = new_bucket(s3)
    policy(server, f"FOR BUCKET {tenant['tenant']}/{b} DO SET {name} WITH key=concurrent")
    clients = [make_client(server.endpoint, tenant, max_pool_connections=4) for _ in range(8)]

    def one(i):
        c = clients[i % len(clients)]
        body = random.Random(i).randbytes(64 * 1024 + i)
        c.put_object(Bucket=b, Key=f"o{i}", Body=body)
        return c.get_object(Bucket=b, Key=f"o{i}")["Body"].read() == body

    start = time.monotonic()
    with ThreadPoolExecutor(64) as ex:
        results = list(ex.map(one, range(64)))
    assert all(results), results.count(False)
    print(f"64 concurrent PUT+GET through a WASM xor: {time.monotonic() - start:.2f} s")


def test_get_only_redaction_masks_reads_and_stores_clear_text(server, tenant, s3):
    """A one-way filter declared for GET rewrites what is read, not what is
    stored: the bucket keeps the clear text, every GET returns it masked."""
    name = uniq("redactget")
    create_filter(server, name, "redact", "--methods", "GET", "--stages", "gateway",
                  "--doc", "masks e-mail addresses and card numbers on reads")
    b = new_bucket(s3)
    policy(server, f"FOR BUCKET {tenant['tenant']}/{b} DO SET {name}")
    marker = uuid.uuid4().hex
    text = f"order {marker} by alice@example.com paid with 4111 1111 1111 1111\nno secrets here\n".encode()
    masked = f"order {marker} by [email] paid with [card]\nno secrets here\n".encode()
    put = s3.put_object(Bucket=b, Key="orders.txt", Body=text)

    got = s3.get_object(Bucket=b, Key="orders.txt")
    assert got["Body"].read() == masked
    hdrs = got["ResponseMetadata"]["HTTPHeaders"]
    assert hdrs["x-facet-transform"] == name
    # The stored object's ETag describes the clear text, not what was sent.
    assert got["ETag"] != put["ETag"]
    # The whole output fit in the read-ahead: its exact length is sent.
    assert int(hdrs["content-length"]) == len(masked)
    # The stored object stays clear: on disk, and its listed size.
    assert stored_files_containing(server, b"alice@example.com paid with 4111"), "the clear text is not on disk"
    assert s3.list_objects_v2(Bucket=b)["Contents"][0]["Size"] == len(text)

    # HEAD runs no filter: no length it could not honour, the same ETag.
    head = s3.head_object(Bucket=b, Key="orders.txt")
    assert head["ETag"] == got["ETag"]
    assert "content-length" not in head["ResponseMetadata"]["HTTPHeaders"], head["ResponseMetadata"]["HTTPHeaders"]
    # Conditional GETs compare with the transformed ETag.
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=b, Key="orders.txt", IfNoneMatch=got["ETag"])
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 304
    assert s3.get_object(Bucket=b, Key="orders.txt", IfMatch=got["ETag"])["Body"].read() == masked

    # A range applies to the transformed stream.
    r = s3.get_object(Bucket=b, Key="orders.txt", Range="bytes=39-52")
    assert r["Body"].read() == masked[39:53], masked[39:53]
    assert r["ContentRange"] == "bytes 39-52/*"
    r = s3.get_object(Bucket=b, Key="orders.txt", Range=f"bytes={len(masked) - 5}-")
    assert r["Body"].read() == masked[-5:]
    assert r["ContentRange"] == f"bytes {len(masked) - 5}-{len(masked) - 1}/*"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=b, Key="orders.txt", Range=f"bytes={len(masked)}-{len(masked) + 10}")
    assert e.value.response["Error"]["Code"] == "InvalidRange"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=b, Key="orders.txt", Range="bytes=-10")
    assert e.value.response["Error"]["Code"] == "NotImplemented"
    assert "suffix range" in e.value.response["Error"]["Message"]

    # Another bucket of the tenant is not touched.
    plain = new_bucket(s3)
    s3.put_object(Bucket=plain, Key="orders.txt", Body=text)
    assert s3.get_object(Bucket=plain, Key="orders.txt")["Body"].read() == text

    # Nothing reads the object past the filter: neither a query of it nor a
    # copy of it into a bucket without the filter.
    with pytest.raises(ClientError) as e:
        s3.select_object_content(Bucket=b, Key="orders.txt", ExpressionType="SQL", Expression="SELECT * FROM S3Object",
                                 InputSerialization={"CSV": {}}, OutputSerialization={"CSV": {}})
    assert e.value.response["Error"]["Code"] == "NotImplemented" and name in e.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=plain, Key="copy.txt", CopySource={"Bucket": b, "Key": "orders.txt"})
    assert e.value.response["Error"]["Code"] == "NotImplemented" and name in e.value.response["Error"]["Message"]
    # The other way round is a plain copy, read through the filter after.
    s3.copy_object(Bucket=b, Key="copied.txt", CopySource={"Bucket": plain, "Key": "orders.txt"})
    assert s3.get_object(Bucket=b, Key="copied.txt")["Body"].read() == masked


def test_get_transform_streams_large_objects_chunked(server, tenant, s3):
    """Uppercase on GET over an object far larger than the read-ahead: sent
    chunked, with ranges anywhere in it, and a failing module's error."""
    name = uniq("upget")
    create_filter(server, name, "uppercase", "--methods", "GET", "--stages", "storage")
    b = new_bucket(s3)
    policy(server, f"FOR BUCKET {tenant['tenant']}/{b} DO SET {name}")
    rnd = random.Random(11)
    body = bytes(rnd.choice(b"abcdefghij \n") for _ in range(3 << 20))
    s3.put_object(Bucket=b, Key="big.txt", Body=body)
    got = s3.get_object(Bucket=b, Key="big.txt")
    hdrs = got["ResponseMetadata"]["HTTPHeaders"]
    assert hdrs.get("transfer-encoding") == "chunked" and "content-length" not in hdrs, hdrs
    assert got["Body"].read() == body.upper()
    lo, hi = 2_000_000, 2_900_000
    r = s3.get_object(Bucket=b, Key="big.txt", Range=f"bytes={lo}-{hi}")
    assert r["Body"].read() == body[lo:hi + 1].upper()
    assert r["ContentRange"] == f"bytes {lo}-{hi}/*" and r["ContentLength"] == hi - lo + 1
    # An open range past the read-ahead cannot name its last byte.
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=b, Key="big.txt", Range="bytes=100-")
    assert e.value.response["Error"]["Code"] == "NotImplemented"
    # The stored object is the lower-case original.
    assert stored_files_containing(server, body[-64:])

    # A GET filter that fails at once is an S3 error naming it.
    bad = uniq("hostileget")
    create_filter(server, bad, "hostile", "--methods", "GET", "--stages", "gateway", "--owner", tenant["tenant"],
                  "--param", "mode:string:", "--param", "arg:string:")
    b2 = new_bucket(s3)
    s3.put_object(Bucket=b2, Key="x", Body=b"some input " * 100)
    policy(server, f"FOR BUCKET {tenant['tenant']}/{b2} DO SET {bad} WITH mode=trap")
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=b2, Key="x")
    err = e.value.response["Error"]
    assert err["Code"] == "FilterFailed" and bad in err["Message"] and "trapped" in err["Message"], err


def test_old_version_mounts_the_dependency_it_was_created_with(server, tenant, s3, tmp_path):
    """A reversible filter whose output depends on a dictionary: after the
    dictionary changes, objects written before are undone by the version
    that wrote them, mounting the dictionary it was created with."""
    dep = uniq("dict")
    f = tmp_path / "dict.txt"
    one, two = b"dictionary, first edition\n", b"dictionary, second and longer edition\n"
    f.write_bytes(one)
    ctl_json(server, "filter", "dependency", "create", dep, "--file", str(f), "--owner", tenant["tenant"])
    name = uniq("deprev")
    create_filter(server, name, "hostile", "--methods", "PUT", "--stages", "gateway", "--reversible",
                  "--owner", tenant["tenant"], "--param", "mode:string:", "--param", "arg:string:", "--dependency", dep)
    b = new_bucket(s3)
    policy(server, f"FOR BUCKET {tenant['tenant']}/{b} DO SET {name} WITH mode=dep, arg={dep}")
    # In this mode the module writes the dictionary, in both directions: a
    # GET returns the dictionary its version mounts, which must have the
    # written object's size (the decoder checks it).
    s3.put_object(Bucket=b, Key="old", Body=one)
    assert s3.get_object(Bucket=b, Key="old")["Body"].read() == one

    f.write_bytes(two)
    ctl_json(server, "filter", "dependency", "create", dep, "--file", str(f), "--owner", tenant["tenant"])
    assert ctl_json(server, "filter", "show", name)["version"] == 2
    s3.put_object(Bucket=b, Key="new", Body=two)
    assert s3.get_object(Bucket=b, Key="new")["Body"].read() == two
    assert s3.get_object(Bucket=b, Key="old")["Body"].read() == one
