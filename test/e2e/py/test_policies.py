"""Policies and filters end to end: `facet ctl policy ...` changes what a
real `facet serve` stores, and boto3 / the aws cli read back exactly what
they wrote (issue 3, the sources' scenarios).

Each test has its own tenant, and its policies name only that tenant, so the
tests share the session's server without seeing each other's policies.
Stored sizes come from `facet ctl tenant usage -o json`: the difference
before and after one PUT is what that object takes on disk.
"""

import hashlib
import json
import random
import subprocess
import time
import uuid

import pytest

from conftest import make_client

MiB = 1024 * 1024


def new_bucket(s3):
    name = "pol-" + uuid.uuid4().hex[:16]
    s3.create_bucket(Bucket=name)
    return name


def log_text(n, seed):
    """n bytes of log lines: redundant like real logs, but not constant."""
    rnd = random.Random(seed)
    paths = ["/api/v1/items", "/api/v1/users", "/static/app.js", "/healthz", "/api/v1/orders"]
    out, size, i = [], 0, 0
    while size < n:
        line = (f"2026-03-{1 + i // 86400 % 28:02d}T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z "
                f"host-{rnd.randint(1, 12)} {rnd.choice(['GET', 'GET', 'PUT', 'DELETE'])} "
                f"{rnd.choice(paths)}/{rnd.randint(1, 99999)} status={rnd.choice([200, 200, 200, 201, 404, 500])} "
                f"bytes={rnd.randint(0, 65536)} dur={rnd.random() * 40:.3f}ms\n").encode()
        out.append(line)
        size += len(line)
        i += 1
    return b"".join(out)[:n]


def random_bytes(n, seed):
    return random.Random(seed).randbytes(n)


def md5_etag(b):
    return '"' + hashlib.md5(b).hexdigest() + '"'


def policy_add(server, text):
    """Applies policies; returns the stored ones (their ids are p<N>)."""
    out = json.loads(server.ctl("policy", "add", text, "-o", "json"))
    assert out["policies"], out
    return out["policies"]


def policy_list(server):
    return json.loads(server.ctl("policy", "list", "-o", "json"))["policies"]


def explain(server, tenant, bucket=None, key=None, size=None, ctype=None):
    args = ["policy", "explain", "--tenant", tenant]
    if bucket:
        args += ["--bucket", bucket]
    if key:
        args += ["--key", key]
    if size is not None:
        args += ["--size", str(size)]
    if ctype:
        args += ["--type", ctype]
    return json.loads(server.ctl(*args, "-o", "json"))


def stage(expl, method, stage_name):
    """[(filter, policy id)] of one pipeline of an explain answer."""
    for p in expl["pipelines"]:
        if p["method"] == method and p["stage"] == stage_name:
            return [(f["filter"], f["policy"]) for f in p["filters"]]
    raise AssertionError(f"explain has no {method} {stage_name} pipeline: {expl}")


def wait_for(cond, what, timeout=5.0):
    """Polls cond until it holds; fails after timeout seconds."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def usage(server, tenant):
    u = json.loads(server.ctl("tenant", "usage", tenant, "-o", "json"))
    assert u["tenant"] == tenant, u
    return u


def put_stored(server, s3, tenant, bucket, key, body, **kw):
    """PUTs body and returns the bytes the object takes on disk."""
    before = usage(server, tenant)
    r = s3.put_object(Bucket=bucket, Key=key, Body=body, **kw)
    assert r["ETag"] == md5_etag(body), (key, r["ETag"])
    after = usage(server, tenant)
    assert after["objects"] == before["objects"] + 1, (before, after)
    assert after["logical_bytes"] - before["logical_bytes"] == len(body), (before, after)
    return after["stored_bytes"] - before["stored_bytes"]


def check_object(s3, bucket, key, body):
    """GET, HEAD and the listing show what the client wrote."""
    got = s3.get_object(Bucket=bucket, Key=key)
    data = got["Body"].read()
    assert len(data) == len(body) and data == body, f"{key}: GET returned {len(data)} bytes, want {len(body)} (md5 {hashlib.md5(data).hexdigest()} vs {hashlib.md5(body).hexdigest()})"
    assert got["ContentLength"] == len(body)
    head = s3.head_object(Bucket=bucket, Key=key)
    assert head["ContentLength"] == len(body), (key, head["ContentLength"])
    if "-" not in head["ETag"]:
        assert head["ETag"] == md5_etag(body), (key, head["ETag"])
    listed = {o["Key"]: o for o in s3.list_objects_v2(Bucket=bucket, Prefix=key)["Contents"]}
    assert listed[key]["Size"] == len(body), listed[key]
    assert listed[key]["ETag"] == head["ETag"], (listed[key]["ETag"], head["ETag"])


def test_tenant_gzip_compression_shrinks_stored_bytes(server, tenant, s3):
    """FOR TENANT t1 DO SET compression WITH engine=gzip (the paper's first example)."""
    t = tenant["tenant"]
    b = new_bucket(s3)
    plain = log_text(3 * MiB + 12345, "plain")
    # Before the policy, what is written is what is stored.
    assert put_stored(server, s3, t, b, "before.log", plain) == len(plain)

    [p] = policy_add(server, f"FOR TENANT {t} DO SET compression WITH engine=gzip")
    assert p["state"] == "active", p
    ex = explain(server, t, b, "app.log")
    assert stage(ex, "PUT", "gateway") == [("compression", p["id"])], ex
    gw = [f for f in ex["pipelines"] if f["method"] == "PUT" and f["stage"] == "gateway"][0]["filters"][0]
    assert gw["params"]["engine"] == "gzip", gw

    body = log_text(3 * MiB + 777, "app")
    stored = put_stored(server, s3, t, b, "app.log", body)
    assert 0 < stored < len(body) // 3, f"gzip on log lines stored {stored} of {len(body)} bytes"
    check_object(s3, b, "app.log", body)
    check_object(s3, b, "before.log", plain)
    u = usage(server, t)
    assert u["saved_bytes"] == u["logical_bytes"] - u["stored_bytes"] and u["saved_bytes"] > 0, u
    assert 0 < u["savings"] < 1, u

    # Ranges of a compressed object: inside a frame, across the 1 MiB frame
    # boundary, the tail, a suffix range.
    for a, z in [(0, 0), (100, 5000), (MiB - 10, MiB + 10), (2 * MiB - 1, 3 * MiB), (len(body) - 1, len(body) - 1)]:
        r = s3.get_object(Bucket=b, Key="app.log", Range=f"bytes={a}-{z}")
        assert r["ContentRange"] == f"bytes {a}-{z}/{len(body)}", r["ContentRange"]
        assert r["Body"].read() == body[a:z + 1], (a, z)
    r = s3.get_object(Bucket=b, Key="app.log", Range="bytes=-1000")
    assert r["Body"].read() == body[-1000:]

    # Objects are undone from their own reverse plan, whatever the policies
    # say now: after the policy is gone the compressed object still reads,
    # and new writes are stored as written.
    # A deletion is visible to the next request, like an addition.
    server.ctl("policy", "delete", p["id"])
    assert stage(explain(server, t, b, "x.log"), "PUT", "gateway") == []
    check_object(s3, b, "app.log", body)
    after = log_text(MiB, "after")
    assert put_stored(server, s3, t, b, "after.log", after) == len(after)
    check_object(s3, b, "after.log", after)


def test_paper_form_parses_and_applies(server, tenant, s3):
    """The paper's form: upper-case keywords and filter names, two actions."""
    t = tenant["tenant"]
    b = new_bucket(s3)
    [p] = policy_add(server, f"FOR TENANT {t} WHEN OBJECT_TYPE=DOCS DO SET COMPRESSION ON PROXY, SET ENCRYPTION")
    ex = explain(server, t, b, "paper.pdf")
    names = [f for f, _ in stage(ex, "PUT", "gateway") + stage(ex, "PUT", "storage")]
    assert names == ["compression", "encryption"], ex
    body = log_text(2 * MiB, "paper")
    stored = put_stored(server, s3, t, b, "paper.pdf", body)
    assert stored < len(body) // 2, stored
    check_object(s3, b, "paper.pdf", body)


def test_crystal_p1_p2_p3(server, tenant, s3):
    """seeds/001 §6: P1 encryption at the storage stage, P2 compression at
    the proxy (pipelining: compress, then encrypt), P3 a bucket that holds
    random data drops compression but keeps its tenant's encryption."""
    t = tenant["tenant"]
    c1 = new_bucket(s3)  # random data
    c2 = new_bucket(s3)  # redundant data
    objects = {}

    def put(bucket, key, body):
        objects[(bucket, key)] = body
        return put_stored(server, s3, t, bucket, key, body)

    # P1: encryption on the object (storage) stage.
    [p1] = policy_add(server, f"FOR TENANT {t} DO SET encryption ON OBJECT")
    for bucket in (c1, c2):
        ex = explain(server, t, bucket, "k")
        assert stage(ex, "PUT", "gateway") == [], ex
        assert stage(ex, "PUT", "storage") == [("encryption", p1["id"])], ex
    rnd1 = random_bytes(MiB + 4321, "p1-random")
    stored = put(c1, "p1.bin", rnd1)
    # DARE adds a header and a tag per 64 KiB package, and nothing shrinks.
    assert len(rnd1) < stored < len(rnd1) + len(rnd1) // 100, stored
    red1 = log_text(MiB + 99, "p1-logs")
    assert put(c2, "p1.log", red1) > len(red1)

    # P2: compression at the proxy (gateway) while encryption stays at the
    # storage stage: both run, compression first.
    [p2] = policy_add(server, f"FOR TENANT {t} DO SET compression ON PROXY")
    for bucket in (c1, c2):
        ex = explain(server, t, bucket, "k")
        assert stage(ex, "PUT", "gateway") == [("compression", p2["id"])], ex
        assert stage(ex, "PUT", "storage") == [("encryption", p1["id"])], ex
    red2 = log_text(2 * MiB + 5, "p2-logs")
    stored = put(c2, "p2.log", red2)
    assert stored < len(red2) // 2, f"compress-then-encrypt stored {stored} of {len(red2)}"
    rnd2 = random_bytes(MiB, "p2-random")
    assert put(c1, "p2.bin", rnd2) >= len(rnd2)

    # P3: the random-data bucket drops compression; encryption, set at the
    # tenant, is still inherited (specialisation is per filter).
    [p3] = policy_add(server, f"FOR CONTAINER {t}/{c1} DO DELETE compression")
    ex = explain(server, t, c1, "k")
    assert stage(ex, "PUT", "gateway") == [], ex
    assert stage(ex, "PUT", "storage") == [("encryption", p1["id"])], ex
    removed = [(r["filter"], r["policy"]) for r in ex.get("removed", [])]
    assert ("compression", p2["id"]) in removed, ex
    assert any(p3["id"] in r.get("note", "") for r in ex["removed"]), ex
    # The other bucket keeps the tenant's whole pipeline.
    ex = explain(server, t, c2, "k")
    assert stage(ex, "PUT", "gateway") == [("compression", p2["id"])], ex
    assert stage(ex, "PUT", "storage") == [("encryption", p1["id"])], ex

    rnd3 = random_bytes(2 * MiB + 1, "p3-random")
    stored = put(c1, "p3.bin", rnd3)
    assert len(rnd3) < stored < len(rnd3) + len(rnd3) // 100, stored
    red3 = log_text(MiB, "p3-logs")
    assert put(c2, "p3.log", red3) < len(red3) // 2

    # Every object, whatever pipeline wrote it, reads back as written.
    for (bucket, key), body in objects.items():
        check_object(s3, bucket, key, body)
    # Ranges over encrypted (and compressed+encrypted) objects, across the
    # 64 KiB DARE packages.
    for (bucket, key) in [(c1, "p3.bin"), (c2, "p2.log"), (c1, "p1.bin")]:
        body = objects[(bucket, key)]
        for a, z in [(0, 9), (65530, 65545), (len(body) // 2, len(body) // 2 + 200000), (len(body) - 3, len(body) - 1)]:
            got = s3.get_object(Bucket=bucket, Key=key, Range=f"bytes={a}-{z}")["Body"].read()
            assert got == body[a:z + 1], (key, a, z)


def test_docs_only_policy(server, tenant, s3):
    """FOR TENANT t1 WHEN OBJECT_TYPE=DOCS DO SET compression: documents
    (by extension or content type) are compressed, other objects are not."""
    t = tenant["tenant"]
    b = new_bucket(s3)
    [p] = policy_add(server, f"FOR TENANT {t} WHEN OBJECT_TYPE=DOCS DO SET compression")
    assert stage(explain(server, t, b, "a.pdf"), "PUT", "gateway") == [("compression", p["id"])]
    assert stage(explain(server, t, b, "a.bin"), "PUT", "gateway") == []
    assert stage(explain(server, t, b, "noext", ctype="application/pdf"), "PUT", "gateway") == [("compression", p["id"])]

    body = log_text(MiB + 1000, "docs")
    cases = [
        ("report.pdf", {}, True),
        ("notes.txt", {}, True),
        ("dir/UPPER.PDF", {}, True),
        ("scan", {"ContentType": "application/pdf"}, True),
        ("data.bin", {}, False),
        ("data.bin.2", {"ContentType": "application/octet-stream"}, False),
        ("report.pdf.bak", {}, False),
    ]
    for key, kw, compressed in cases:
        stored = put_stored(server, s3, t, b, key, body, **kw)
        if compressed:
            assert stored < len(body) // 2, f"{key} {kw}: stored {stored} of {len(body)}; want it compressed"
        else:
            assert stored == len(body), f"{key} {kw}: stored {stored} of {len(body)}; want it as written"
    for key, _, _ in cases:
        check_object(s3, b, key, body)


def multipart_put(s3, bucket, key, body, part=5 * MiB, **kw):
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, **kw)["UploadId"]
    parts = []
    for i, off in enumerate(range(0, len(body), part), 1):
        e = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=i, Body=body[off:off + part])["ETag"]
        parts.append({"PartNumber": i, "ETag": e})
    s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up, MultipartUpload={"Parts": parts})


def test_object_metadata_conditions_on_every_write_path(server, tenant, s3):
    """OBJECT_TYPE by content type and OBJECT_TAG see the object's metadata
    whichever way it is written: a PUT, a multipart upload (whose parts do
    not repeat the headers of CreateMultipartUpload), a copy."""
    t = tenant["tenant"]
    b = new_bucket(s3)
    policy_add(server, f"FOR TENANT {t} WHEN OBJECT_TYPE=DOCS DO SET compression\n"
                       f"FOR TENANT {t} WHEN OBJECT_TAG=x-amz-meta-class:cold DO SET encryption")
    body = log_text(6 * MiB, "meta-paths")

    def stored_by(write):
        before = usage(server, t)
        write()
        after = usage(server, t)
        return after["stored_bytes"] - before["stored_bytes"]

    # Compressed by content type, whichever the path.
    assert stored_by(lambda: s3.put_object(Bucket=b, Key="put-pdf", Body=body, ContentType="application/pdf")) < len(body) // 2
    assert stored_by(lambda: multipart_put(s3, b, "mp-pdf", body, ContentType="application/pdf")) < len(body) // 2, \
        "multipart upload created with Content-Type application/pdf was not compressed"
    assert stored_by(lambda: multipart_put(s3, b, "mp-bin", body, ContentType="application/octet-stream")) == len(body)
    # A copy is filtered as its destination's metadata says.
    s3.put_object(Bucket=b, Key="src-bin", Body=body)
    assert stored_by(lambda: s3.copy_object(Bucket=b, Key="copy-pdf", CopySource={"Bucket": b, "Key": "src-bin"},
                                            MetadataDirective="REPLACE", ContentType="application/pdf")) < len(body) // 2
    # ... and with the default COPY directive, the metadata is the source's.
    assert stored_by(lambda: s3.copy_object(Bucket=b, Key="copy-of-pdf", CopySource={"Bucket": b, "Key": "put-pdf"})) < len(body) // 2
    # Tagged objects are encrypted (a little bigger, and never plain).
    for name, write in [
        ("put", lambda: s3.put_object(Bucket=b, Key="put-cold", Body=body, Metadata={"class": "cold"})),
        ("multipart", lambda: multipart_put(s3, b, "mp-cold", body, Metadata={"class": "cold"})),
    ]:
        n = stored_by(write)
        assert len(body) < n < len(body) + len(body) // 100, f"{name} with x-amz-meta-class=cold stored {n} of {len(body)}; want it encrypted"
    assert stored_by(lambda: s3.put_object(Bucket=b, Key="put-hot", Body=body, Metadata={"class": "hot"})) == len(body)

    for key in ["put-pdf", "mp-pdf", "mp-bin", "copy-pdf", "copy-of-pdf", "put-cold", "mp-cold", "put-hot"]:
        check_object(s3, b, key, body)
    assert s3.head_object(Bucket=b, Key="mp-cold")["Metadata"] == {"class": "cold"}
    assert s3.head_object(Bucket=b, Key="mp-pdf")["ContentType"] == "application/pdf"


def test_object_size_condition(server, tenant, s3, tls):
    """... DO SET compression TO OBJECT_SIZE>1MB: 1MB is 10^6 bytes; the
    size is the client's, also when it streams the body in aws-chunked
    encoding (x-amz-decoded-content-length)."""
    t = tenant["tenant"]
    b = new_bucket(s3)
    [p] = policy_add(server, f"FOR TENANT {t} DO SET compression TO OBJECT_SIZE>1MB")
    assert stage(explain(server, t, b, "k", size="2MB"), "PUT", "gateway") == [("compression", p["id"])]
    assert stage(explain(server, t, b, "k", size=1000000), "PUT", "gateway") == []
    assert stage(explain(server, t, b, "k", size=1000001), "PUT", "gateway") == [("compression", p["id"])]

    for n, compressed in [(900_000, False), (1_000_000, False), (1_000_001, True), (3 * MiB, True)]:
        body = log_text(n, f"size-{n}")
        stored = put_stored(server, s3, t, b, f"obj-{n}", body)
        if compressed:
            assert stored < n // 2, f"{n} bytes: stored {stored}; want compressed"
        else:
            assert stored == n, f"{n} bytes: stored {stored}; want as written"
        check_object(s3, b, f"obj-{n}", body)

    # boto3's default over TLS: STREAMING-UNSIGNED-PAYLOAD-TRAILER, where
    # the request's Content-Length is not the object's size.
    endpoint, ca = tls
    s3c = make_client(endpoint, tenant, verify=ca)
    for n, compressed in [(500_000, False), (2 * MiB, True)]:
        body = log_text(n, f"chunked-{n}")
        stored = put_stored(server, s3c, t, b, f"chunked-{n}", body)
        if compressed:
            assert stored < n // 2, f"aws-chunked {n} bytes: stored {stored}; want compressed"
        else:
            assert stored == n, f"aws-chunked {n} bytes: stored {stored}; want as written"
        check_object(s3, b, f"chunked-{n}", body)


def test_multipart_with_compression_and_encryption(server, tenant, s3, cli, tmp_path):
    """aws s3 cp of a 26 MiB compressible file (5 MiB parts) through
    compression and encryption: identical download, parts and ranges."""
    t = tenant["tenant"]
    b = new_bucket(s3)
    policy_add(server, f"FOR TENANT {t} DO SET compression WITH engine=zstd ON GATEWAY, SET encryption ON STORAGE")
    body = log_text(26 * MiB, "multipart")
    src = tmp_path / "big.log"
    src.write_bytes(body)
    cli.run("s3", "cp", str(src), f"s3://{b}/big.log")
    head = s3.head_object(Bucket=b, Key="big.log")
    assert head["ContentLength"] == len(body), head["ContentLength"]
    assert head["ETag"].endswith('-6"'), head["ETag"]  # 5 x 5 MiB + 1 MiB
    u = usage(server, t)
    assert u["logical_bytes"] == len(body) and u["stored_bytes"] < len(body) // 2, u

    dst = tmp_path / "back.log"
    cli.run("s3", "cp", f"s3://{b}/big.log", str(dst))
    got = dst.read_bytes()
    assert len(got) == len(body) and got == body, f"download differs: {len(got)} bytes"

    part = 5 * MiB
    ranges = [
        (0, 0), (0, 99), (12345, 67890),
        (MiB - 5, MiB + 5),              # a compression frame boundary
        (part - 1, part),                # the first part boundary
        (part - 100_000, part + 100_000),
        (2 * part - 7, 2 * part + 7),
        (3 * part + 65530, 3 * part + 65540),
        (4 * MiB, 16 * MiB),             # across several parts
        (5 * part - 1, 5 * part),        # into the last, short part
        (len(body) - 10, len(body) - 1),
    ]
    for a, z in ranges:
        r = s3.get_object(Bucket=b, Key="big.log", Range=f"bytes={a}-{z}")
        assert r["ContentRange"] == f"bytes {a}-{z}/{len(body)}", r["ContentRange"]
        data = r["Body"].read()
        assert data == body[a:z + 1], f"range {a}-{z}: {len(data)} bytes, wrong content"
    r = s3.get_object(Bucket=b, Key="big.log", Range=f"bytes={len(body) - 50}-")
    assert r["Body"].read() == body[-50:]
    # GET ?partNumber= answers the part as the client uploaded it.
    r = s3.get_object(Bucket=b, Key="big.log", PartNumber=2)
    assert r["Body"].read() == body[part:2 * part]
    r = s3.get_object(Bucket=b, Key="big.log", PartNumber=6)
    assert r["Body"].read() == body[5 * part:]
    assert s3.head_object(Bucket=b, Key="big.log", PartNumber=3)["ContentLength"] == part


def test_multipart_policy_added_between_parts(server, tenant, s3):
    """Each part goes through the pipeline in force when it is uploaded:
    a part written before a policy and parts written after it make one
    object that reads back whole, by range and by part."""
    t = tenant["tenant"]
    b = new_bucket(s3)
    part = 5 * MiB
    bodies = [log_text(part, "mp-1"), log_text(part + 3, "mp-2"), log_text(4321, "mp-3")]
    up = s3.create_multipart_upload(Bucket=b, Key="mixed.log")["UploadId"]
    etags = [s3.upload_part(Bucket=b, Key="mixed.log", UploadId=up, PartNumber=1, Body=bodies[0])["ETag"]]
    policy_add(server, f"FOR TENANT {t} DO SET compression WITH engine=lz4, SET encryption")
    for i in (2, 3):
        etags.append(s3.upload_part(Bucket=b, Key="mixed.log", UploadId=up, PartNumber=i, Body=bodies[i - 1])["ETag"])
    s3.complete_multipart_upload(Bucket=b, Key="mixed.log", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})
    body = b"".join(bodies)
    check_object(s3, b, "mixed.log", body)
    u = usage(server, t)
    # Part 1 is stored as written, parts 2 and 3 compressed.
    assert len(bodies[0]) < u["stored_bytes"] < len(bodies[0]) + len(bodies[1]) // 2, u
    for a, z in [(part - 10, part + 10), (2 * part - 5, 2 * part + 10), (0, len(body) - 1)]:
        got = s3.get_object(Bucket=b, Key="mixed.log", Range=f"bytes={a}-{z}")["Body"].read()
        assert got == body[a:z + 1], (a, z)
    for i, want in enumerate(bodies, 1):
        r = s3.get_object(Bucket=b, Key="mixed.log", PartNumber=i)
        assert r["ContentLength"] == len(want), (i, r["ContentLength"])
        assert r["Body"].read() == want, f"part {i}"


def test_dsl_error_reports_position_and_stores_nothing(server, tenant):
    t = tenant["tenant"]
    before = policy_list(server)
    text = f"FOR TENANT {t} DO SET compresion"
    col = text.index("compresion") + 1
    for verb in ("add", "validate"):
        cmd = [server.binary, "ctl", "--admin", f"http://{server.admin_addr}", "--token", server.token,
               "policy", verb, text]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        assert res.returncode != 0, f"policy {verb} of a misspelt filter succeeded: {res.stdout}"
        err = res.stderr
        assert f":1:{col}:" in err, err
        assert 'unknown filter "compresion"' in err, err
        assert 'did you mean "compression"?' in err, err
        lines = err.splitlines()
        src = [i for i, line in enumerate(lines) if line.strip() == text]
        assert src, f"the source line is not quoted:\n{err}"
        src_line, caret_line = lines[src[0]], lines[src[0] + 1]
        assert caret_line.strip() == "^", err
        assert caret_line.index("^") == src_line.index(text) + col - 1, f"caret not under column {col}:\n{err}"
    after = policy_list(server)
    assert after == before, "a rejected policy changed the policy list"
    assert not any("compresion" in p["text"] for p in after)

    # A policy of several lines is all or nothing: one bad line stores none.
    res = subprocess.run(
        [server.binary, "ctl", "--admin", f"http://{server.admin_addr}", "--token", server.token,
         "policy", "add", f"FOR TENANT {t} DO SET encryption\nFOR TENANT {t} DO SET compression WITH engnie=gzip"],
        capture_output=True, text=True, timeout=30)
    assert res.returncode != 0
    assert ":2:" in res.stderr and 'did you mean "engine"?' in res.stderr, res.stderr
    assert policy_list(server) == before
    assert stage(explain(server, t), "PUT", "storage") == []
