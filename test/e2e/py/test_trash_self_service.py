"""The recycle bin, self-service (issue 12): a tenant lists and restores its
own deleted objects with its own access key, through `facet ctl
--access-key/--secret-key` and through SigV4-signed calls of the admin API
(botocore's signer), and never reaches another tenant's bin. The admin, with
its token, still sees every bin. Real parts: two `facet gateway`s over
redis-server, NATS and versitygw (test_filters_more's fleet)."""

import json
import os
import secrets
import subprocess
import urllib.error
import urllib.request
import uuid

import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from test_filters_more import REGION, _bin, _setup, pair  # noqa: F401 (pair is the shared fleet fixture)


def _as_tenant(gw, creds, *args):
    """`facet ctl` with a tenant's keys and no admin token anywhere."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FACET_")}
    cmd = [gw.binary, "ctl", "--admin", f"http://{gw.admin_addr}",
           "--access-key", creds["access_key"], "--secret-key", creds["secret_key"], *args]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=30, env=env)
    if res.returncode != 0:
        raise RuntimeError(f"facet ctl {' '.join(args)} as a tenant failed ({res.returncode}): {res.stderr}")
    return res.stdout


def _signed(gw, creds, method, path):
    """A control API call signed with a tenant's key (S3's SigV4, as any
    AWS SDK signs, for the admin API's service "facet-admin": a signature
    made for "s3" is refused there): returns the status and the decoded
    JSON answer."""
    url = f"http://{gw.admin_addr}{path}"
    req = AWSRequest(method=method, url=url, data=b"")
    S3SigV4Auth(Credentials(creds["access_key"], creds["secret_key"]), "facet-admin", REGION).add_auth(req)
    r = urllib.request.Request(url, method=method, headers=dict(req.headers.items()))
    try:
        with urllib.request.urlopen(r, timeout=10) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def _deleted(pair, prefix):
    """A tenant with a recycle-bin bucket and one object deleted from it."""
    tenant, s3a, s3b, bucket = _setup(pair, prefix, "FOR BUCKET {t}/{b} DO SET recycle_bin WITH max_time=1d")
    body = secrets.token_bytes(50_000)
    put = s3a.put_object(Bucket=bucket, Key="doc", Body=body)
    s3b.delete_object(Bucket=bucket, Key="doc")
    return tenant, s3a, bucket, body, put["ETag"]


def _creds(gw, tenant):
    return json.loads(gw.ctl("key", "create", tenant, "-o", "json"))


def test_tenant_lists_and_restores_only_its_own_bin(pair):
    a, b, _ = pair
    ta, s3a, bucket_a, body_a, etag_a = _deleted(pair, "self")
    tb, s3b_own, bucket_b, _, _ = _deleted(pair, "other")
    ka, kb = _creds(a, ta), _creds(a, tb)

    # Tenant A's own bin, with its own keys, TENANT omitted or named.
    mine = json.loads(_as_tenant(a, ka, "trash", "list", "-o", "json"))["items"]
    assert [(i["tenant"], i["bucket"], i["key"]) for i in mine] == [(ta, bucket_a, "doc")], mine
    assert json.loads(_as_tenant(b, ka, "trash", "list", ta, "-o", "json"))["items"] == mine
    theirs = _bin(a, tb)
    assert [(i["bucket"], i["key"]) for i in theirs] == [(bucket_b, "doc")], theirs

    # Another tenant's bin: refused by name (403), its ids unknown under
    # one's own name (404); nothing changes there.
    with pytest.raises(RuntimeError, match="own recycle bin only"):
        _as_tenant(a, ka, "trash", "list", tb)
    with pytest.raises(RuntimeError, match="own recycle bin only"):
        _as_tenant(a, ka, "trash", "restore", tb, theirs[0]["id"])
    with pytest.raises(RuntimeError, match="NoSuchTrashItem"):
        _as_tenant(a, ka, "trash", "restore", theirs[0]["id"])
    st, err = _signed(a, ka, "GET", f"/v1/trash/{tb}")
    assert st == 403 and err["code"] == "Forbidden" and "own recycle bin only" in err["error"], (st, err)
    st, err = _signed(a, ka, "POST", f"/v1/trash/{tb}/{theirs[0]['id']}/restore")
    assert st == 403, (st, err)
    st, err = _signed(a, ka, "POST", f"/v1/trash/{ta}/{theirs[0]['id']}/restore")
    assert st == 404 and err["code"] == "NoSuchTrashItem", (st, err)
    st, err = _signed(a, ka, "DELETE", f"/v1/trash/{ta}/{mine[0]['id']}")
    assert st == 403 and "administrator" in err["error"], (st, err)
    with pytest.raises(ClientError):
        s3b_own.head_object(Bucket=bucket_b, Key="doc")
    assert _bin(a, tb) == theirs

    # Signed calls of the admin API see the same bin as ctl does.
    st, got = _signed(b, ka, "GET", f"/v1/trash/{ta}")
    assert st == 200 and got["items"] == mine, (st, got)
    bad = dict(ka, secret_key="x" * len(ka["secret_key"]))
    st, err = _signed(a, bad, "GET", f"/v1/trash/{ta}")
    assert st == 403 and err["code"] == "SignatureDoesNotMatch", (st, err)

    # Restore, with the tenant's keys: the object is back as it was.
    out = json.loads(_as_tenant(b, ka, "trash", "restore", mine[0]["id"], "-o", "json"))
    assert (out["bucket"], out["key"]) == (bucket_a, "doc"), out
    r = s3a.get_object(Bucket=bucket_a, Key="doc")
    assert r["Body"].read() == body_a and r["ETag"] == etag_a
    assert json.loads(_as_tenant(a, ka, "trash", "list", "-o", "json"))["items"] == []

    # The admin still sees every tenant's bin; B's item is untouched.
    assert _bin(b, tb) == theirs and _bin(a, ta) == []


def test_delete_racing_puts_keeps_every_deleted_version(server, tenant, bucket):
    """`facet serve` (the fs store deletes conditionally): DELETEs race a
    writer's PUTs on one key. Every version a DELETE removed is in the bin,
    and the version standing at the end is the last PUT or is in the bin:
    no acknowledged write is lost. A DELETE that finds the object changing
    under its copy may answer SlowDown (retryable) and deletes nothing."""
    import hashlib
    import threading
    import time

    from conftest import make_client

    server.ctl("policy", "add", f"FOR BUCKET {tenant['tenant']}/{bucket} DO SET recycle_bin WITH max_time=1d")
    writer = make_client(server.endpoint, tenant)
    stop = threading.Event()
    slow, errors = [], []

    def delete_loop():
        c = make_client(server.endpoint, tenant)
        while not stop.is_set():
            try:
                c.delete_object(Bucket=bucket, Key="k")
            except ClientError as e:
                (slow if e.response["Error"]["Code"] == "SlowDown" else errors).append(e)

    threads = [threading.Thread(target=delete_loop) for _ in range(2)]
    for t in threads:
        t.start()
    deleted, last = [], None
    try:
        for i in range(60):
            body = f"version {i} ".encode() * 500
            writer.put_object(Bucket=bucket, Key="k", Body=body)
            last = hashlib.md5(body).hexdigest()
            time.sleep(0.005)  # room for a DELETE before the next PUT
            try:
                writer.head_object(Bucket=bucket, Key="k")
            except ClientError as e:
                if e.response["ResponseMetadata"]["HTTPStatusCode"] == 404:
                    deleted.append(last)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors
    kept = [i["etag"] for i in json.loads(_as_tenant(server, tenant, "trash", "list", "-o", "json"))["items"]]
    missing = [v for v in deleted if v not in kept]
    assert not missing, f"{len(missing)} deleted versions are not in the bin"
    try:
        now = writer.head_object(Bucket=bucket, Key="k")["ETag"].strip('"')
        assert now == last, "the object standing is not the last PUT"
    except ClientError:
        assert last in kept, "the last PUT was deleted and is not in the bin"
    print(f"\n60 PUTs, {len(deleted)} seen deleted, {len(set(kept))} versions in the bin, {len(slow)} DELETEs answered SlowDown")
