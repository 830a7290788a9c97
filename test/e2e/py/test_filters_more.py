"""Caching, tagging, the metadata guard and the recycle bin end to end with
boto3 (issue 12).

Two gateways share everything a fleet shares: redis-server (metadata),
`facet bus` (NATS), versitygw (the object store) and one `facet controller`
(the dynamic policies). Each gateway has its own object cache directory.

- Coherence: with caching on, GET through gateway A, PUT a new version
  through gateway B, GET through A: A returns the new version, every time,
  over 1,000 alternating rounds, while A's cache does serve hits.
- The sources' dynamic caching policy (Fig. 5): caching switches on above
  5 GETs/s and off again when the rate falls.
- Tagging (key and content), the metadata guard (strip, refuse with
  400 InvalidArgument and nothing stored), and the recycle bin: an object
  deleted by mistake is listed, restored with its bytes, metadata and
  ETag, while the bin itself is never visible through S3.
"""

import json
import secrets
import time
import urllib.request
import uuid

import pytest
from botocore.exceptions import ClientError

from conftest import Server, make_client
from test_cluster import Gateway, _wait, start_fleet

REGION = "us-east-1"


class CachingGateway(Gateway):
    def prom(self):
        req = urllib.request.Request(f"http://{self.admin_addr}/metrics", headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            out = {}
            for line in r.read().decode().splitlines():
                if line and not line.startswith("#"):
                    name, _, value = line.rpartition(" ")
                    out[name] = float(value)
            return out

    def admin(self, method, path):
        req = urllib.request.Request(f"http://{self.admin_addr}/v1{path}", method=method,
                                     headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            body = r.read()
            return r.status, (json.loads(body) if body else None)


@pytest.fixture(scope="module")
def pair(facet_bin, tmp_path_factory):
    d = tmp_path_factory.mktemp("filters")
    with start_fleet(facet_bin, d, extra_env={"FACET_TRASH_PURGE_EVERY": "1s"}, gateway_class=CachingGateway,
                     gateway_env=lambda i: {"FACET_CACHE_DIR": str(d / f"cache-{i}")}) as (gws, backend, _):
        yield gws[0], gws[1], backend


def _tenant(gw):
    name = "t" + uuid.uuid4().hex[:8]
    creds = gw.create_tenant(name)
    return name, creds


def _policy(gws, text):
    """Adds a policy through the first gateway and waits until every
    gateway runs the table that holds it."""
    before = gws[0].prom()["facet_policy_table_version"]
    out = json.loads(gws[0].ctl("policy", "add", text, "-o", "json"))
    _wait(lambda: all(g.prom()["facet_policy_table_version"] > before for g in gws), "every gateway loads the policy")
    return out


def _setup(pair, prefix, policy=None):
    """A new tenant with a bucket, a client on each gateway, and the
    bucket's policy ({t}/{b} stand for the tenant and the bucket)."""
    a, b, _ = pair
    tenant, creds = _tenant(a)
    s3a, s3b = make_client(a.endpoint, creds), make_client(b.endpoint, creds)
    bucket = prefix + "-" + uuid.uuid4().hex[:8]
    s3a.create_bucket(Bucket=bucket)
    if policy:
        _policy((a, b), policy.format(t=tenant, b=bucket))
    return tenant, s3a, s3b, bucket


def _bin(gw, tenant):
    return json.loads(gw.ctl("trash", "list", tenant, "-o", "json"))["items"]


def _cache(gw):
    m = gw.prom()
    return {k: m.get(f"facet_cache_{k}_total", 0) for k in ("hits", "misses", "stale", "invalidations", "admissions")}


def test_caching_coherent_across_gateways(pair):
    a, b, _ = pair
    tenant, s3a, s3b, bucket = _setup(pair, "coh", "FOR BUCKET {t}/{b} DO SET caching WITH size=64MB, policy=lru, admit=both")
    before = _cache(a)
    body = b"v0:" + secrets.token_bytes(4000)
    s3b.put_object(Bucket=bucket, Key="obj", Body=body)
    rounds = 1000
    for i in range(1, rounds + 1):
        got = s3a.get_object(Bucket=bucket, Key="obj")["Body"].read()
        assert got == body, f"round {i}: gateway A returned a stale version before the PUT"
        body = f"v{i}:".encode() + secrets.token_bytes(4000 + i % 97)
        etag = s3b.put_object(Bucket=bucket, Key="obj", Body=body)["ETag"]
        r = s3a.get_object(Bucket=bucket, Key="obj")
        got = r["Body"].read()
        assert got == body and r["ETag"] == etag, f"round {i}: gateway A returned a stale version after B's PUT was acknowledged"
    after = _cache(a)
    hits = after["hits"] - before["hits"]
    stale_or_dropped = (after["stale"] - before["stale"]) + (after["invalidations"] - before["invalidations"])
    print(f"\n{rounds} rounds: gateway A hits {hits:.0f}, misses {after['misses'] - before['misses']:.0f}, "
          f"stale {after['stale'] - before['stale']:.0f}, invalidated {after['invalidations'] - before['invalidations']:.0f}")
    # The first GET of a round reads what the previous round's second GET
    # admitted: the cache is in use, not bypassed.
    assert hits >= rounds // 2, f"only {hits} hits: the cache was not serving"
    assert stale_or_dropped >= rounds // 2
    # The same counters in GET /v1/nodes (what the dashboard's Nodes page
    # shows), for this node and, through the fleet's reports, for B.
    status, nodes = a.admin("GET", "/nodes")
    caches = {n["name"]: n.get("cache") for n in nodes["nodes"]}
    mine = [c for c in caches.values() if c and c["hits"] >= after["hits"]]
    assert status == 200 and mine, caches
    assert 0 < mine[0]["hit_ratio"] <= 1 and mine[0]["served_bytes"] > 0 and "evictions" in mine[0]
    # Ranges come from the cache too.
    s3a.get_object(Bucket=bucket, Key="obj")["Body"].read()
    _wait(lambda: s3a.get_object(Bucket=bucket, Key="obj", Range="bytes=0-0")["Body"].read() == body[:1]
          and _cache(a)["hits"] > after["hits"], "a range GET hit")
    assert s3a.get_object(Bucket=bucket, Key="obj", Range="bytes=10-2009")["Body"].read() == body[10:2010]
    # A DELETE through B is seen by A at once.
    s3b.delete_object(Bucket=bucket, Key="obj")
    with pytest.raises(ClientError) as e:
        s3a.get_object(Bucket=bucket, Key="obj")
    assert e.value.response["Error"]["Code"] == "NoSuchKey"


def test_dynamic_caching_follows_get_rate(pair):
    """FOR BUCKET ... WHEN get_ops > 5 DO SET caching TRANSIENT: on at
    10 GETs/s, off again at 1 GET/s."""
    a, b, _ = pair
    tenant, s3a, _, bucket = _setup(pair, "dyn")
    body = secrets.token_bytes(256 << 10)
    s3a.put_object(Bucket=bucket, Key="hot", Body=body)
    pid = _policy((a, b), f"FOR BUCKET {tenant}/{bucket} WHEN get_ops > 5 DO SET caching TRANSIENT")["policies"][0]["id"]

    def active():
        status, p = a.admin("GET", f"/policies/{pid}")
        return p["state"] == "active"

    def load(rate, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            t = time.monotonic()
            assert s3a.get_object(Bucket=bucket, Key="hot")["Body"].read() == body
            time.sleep(max(0, 1 / rate - (time.monotonic() - t)))

    assert not active()
    h0 = _cache(a)["hits"]
    load(1, 3)
    assert _cache(a)["hits"] == h0, "caching ran below the threshold"
    deadline = time.monotonic() + 60
    while not active():
        assert time.monotonic() < deadline, "caching did not switch on at 10 GETs/s"
        load(10, 1)
    load(10, 2)
    h1 = _cache(a)["hits"]
    assert h1 > h0 + 5, "caching switched on but served no hit"
    deadline = time.monotonic() + 60
    while active():
        assert time.monotonic() < deadline, "caching did not switch off at 1 GET/s"
        load(1, 1)
    time.sleep(1)
    h2 = _cache(a)["hits"]
    load(2, 2)
    assert _cache(a)["hits"] == h2, "caching still served after it switched off"
    # The workload metric is in the DSL's vocabulary and measured.
    status, m = a.admin("GET", "/metrics/cache_hit_ratio")
    assert status == 200 and m["metric"] == "cache_hit_ratio"
    a.ctl("policy", "validate", f"FOR BUCKET {tenant}/{bucket} WHEN cache_hit_ratio < 10% DO DELETE caching")


def test_tagging_sets_metadata_from_key_and_content(pair):
    a, b, _ = pair
    tenant, _, s3, bucket = _setup(pair, "tag", 'FOR BUCKET {t}/{b} DO SET tagging WITH regex="^logs/([a-z]+)/", tag="app=$1"')
    s3.put_object(Bucket=bucket, Key="logs/nginx/1.log", Body=b"x", Metadata={"own": "kept"})
    assert s3.head_object(Bucket=bucket, Key="logs/nginx/1.log")["Metadata"] == {"app": "nginx", "own": "kept"}
    s3.put_object(Bucket=bucket, Key="img/1.png", Body=b"x")
    assert s3.head_object(Bucket=bucket, Key="img/1.png")["Metadata"] == {}

    bucket2 = "tagc-" + uuid.uuid4().hex[:8]
    s3.create_bucket(Bucket=bucket2)
    _policy((a, b), f'FOR BUCKET {tenant}/{bucket2} DO SET tagging WITH regex="^%PDF-([0-9.]+)", tag="pdf=$1", match=content, peek=64')
    s3.put_object(Bucket=bucket2, Key="doc.bin", Body=b"%PDF-1.7\n" + secrets.token_bytes(100_000))
    s3.put_object(Bucket=bucket2, Key="other.bin", Body=b"GIF89a" + secrets.token_bytes(1000))
    assert s3.head_object(Bucket=bucket2, Key="doc.bin")["Metadata"] == {"pdf": "1.7"}
    assert s3.head_object(Bucket=bucket2, Key="other.bin")["Metadata"] == {}


def test_metadata_guard_strips_and_refuses(pair):
    tenant, s3, _, bucket = _setup(pair, "guard", 'FOR BUCKET {t}/{b} DO SET metadata_guard WITH strip="x-amz-meta-debug*", deny="x-amz-meta-owner"')
    s3.put_object(Bucket=bucket, Key="k", Body=b"one", Metadata={"debug-trace": "1", "keep": "yes"})
    assert s3.head_object(Bucket=bucket, Key="k")["Metadata"] == {"keep": "yes"}
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="k", Body=b"two", Metadata={"owner": "mallory"})
    err = e.value.response
    assert err["ResponseMetadata"]["HTTPStatusCode"] == 400 and err["Error"]["Code"] == "InvalidArgument"
    assert "x-amz-meta-owner" in err["Error"]["Message"]
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"one", "a refused PUT changed the object"
    with pytest.raises(ClientError) as e:
        s3.create_multipart_upload(Bucket=bucket, Key="mp", Metadata={"owner": "x"})
    assert e.value.response["Error"]["Code"] == "InvalidArgument"
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="k2", CopySource={"Bucket": bucket, "Key": "k"},
                       MetadataDirective="REPLACE", Metadata={"owner": "x"})
    assert e.value.response["Error"]["Code"] == "InvalidArgument"
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="k2")


def test_recycle_bin_restores_an_object_deleted_by_mistake(pair):
    a, b, _ = pair
    # Encrypted at rest: the bin keeps the stored bytes and their reverse
    # plan, and a restored object decrypts as before.
    tenant, s3a, s3b, bucket = _setup(pair, "bin", "FOR BUCKET {t}/{b} DO SET recycle_bin WITH max_time=30d, SET encryption")
    ex = json.loads(a.ctl("policy", "explain", "--tenant", tenant, "--bucket", bucket, "--key", "reports/q1.pdf", "-o", "json"))
    assert [f["filter"] for p in ex["pipelines"] if p["method"] == "DELETE" for f in p["filters"]] == ["recycle_bin"], ex
    body = secrets.token_bytes(300_000)
    put = s3a.put_object(Bucket=bucket, Key="reports/q1.pdf", Body=body, Metadata={"author": "ann"}, ContentType="application/pdf")
    s3b.delete_object(Bucket=bucket, Key="reports/q1.pdf")  # by mistake
    with pytest.raises(ClientError):
        s3a.head_object(Bucket=bucket, Key="reports/q1.pdf")
    assert s3a.list_objects_v2(Bucket=bucket).get("KeyCount") == 0
    assert all(not x["Name"].startswith(".") for x in s3a.list_buckets()["Buckets"])
    with pytest.raises(ClientError):
        s3a.list_objects_v2(Bucket=".facet-trash")

    items = _bin(a, tenant)
    assert len(items) == 1, items
    it = items[0]
    assert (it["bucket"], it["key"], it["size"], it["etag"]) == (bucket, "reports/q1.pdf", len(body), put["ETag"].strip('"'))
    # Another tenant's bin is its own.
    other, _ = _tenant(a)
    assert _bin(a, other) == []

    # A new object took the key meanwhile: restore refuses, then overwrites when asked.
    s3a.put_object(Bucket=bucket, Key="reports/q1.pdf", Body=b"new")
    with pytest.raises(RuntimeError, match="409|TrashConflict|exists"):
        a.ctl("trash", "restore", tenant, it["id"])
    b.ctl("trash", "restore", tenant, it["id"], "--overwrite")
    for s3 in (s3a, s3b):
        r = s3.get_object(Bucket=bucket, Key="reports/q1.pdf")
        assert r["Body"].read() == body and r["ETag"] == put["ETag"]
        assert r["Metadata"] == {"author": "ann"} and r["ContentType"] == "application/pdf"
    assert s3a.get_object(Bucket=bucket, Key="reports/q1.pdf", Range="bytes=1000-1999")["Body"].read() == body[1000:2000]
    assert _bin(a, tenant) != [] , "the overwritten object went to the bin"
    # Purge by hand; the bin is then empty.
    for x in _bin(a, tenant):
        a.ctl("trash", "purge", tenant, x["id"])
    assert _bin(a, tenant) == []
    with pytest.raises(RuntimeError, match="404|NoSuchTrashItem"):
        a.ctl("trash", "restore", tenant, it["id"])

    # DeleteObjects keeps every key; a short max_time is purged by the
    # background task.
    bucket2 = "bin2-" + uuid.uuid4().hex[:8]
    s3a.create_bucket(Bucket=bucket2)
    _policy((a, b), f"FOR BUCKET {tenant}/{bucket2} DO SET recycle_bin WITH max_time=2s")
    for k in ("x", "y"):
        s3a.put_object(Bucket=bucket2, Key=k, Body=k.encode())
    s3a.delete_objects(Bucket=bucket2, Delete={"Objects": [{"Key": "x"}, {"Key": "y"}]})
    listed = _bin(a, tenant)
    assert sorted(i["key"] for i in listed if i["bucket"] == bucket2) == ["x", "y"]
    _wait(lambda: not [i for i in _bin(a, tenant) if i["bucket"] == bucket2],
          "the background purge removes expired objects", timeout=30)


def test_cache_holds_what_clients_see(pair):
    """Objects stored compressed and encrypted are cached decoded: hits and
    their ranges return the client's bytes; a multipart object's parts too."""
    _, _, backend = pair
    tenant, s3a, s3b, bucket = _setup(pair, "dec", "FOR BUCKET {t}/{b} DO SET compression, SET encryption, SET caching WITH admit=get, policy=lfu")
    body = b"".join(f"line {i} of a compressible log\n".encode() for i in range(40000))
    s3b.put_object(Bucket=bucket, Key="log", Body=body)
    stored = backend.head_object(Bucket="facet", Key=f"fleet/{bucket}/log")["ContentLength"]
    assert stored < len(body) // 2
    r = s3a.get_object(Bucket=bucket, Key="log")
    # A miss (a hit only if a retried attempt of this GET filled the cache).
    assert r["Body"].read() == body and r["ResponseMetadata"]["HTTPHeaders"].get("x-facet-cache") in ("miss", "hit")

    def hit(**kw):
        r = s3a.get_object(Bucket=bucket, Key="log", **kw)
        return r["ResponseMetadata"]["HTTPHeaders"].get("x-facet-cache") == "hit", r["Body"].read()

    _wait(lambda: hit()[0], "the fill is committed")  # a whole GET: a miss fills again
    for rng, want in (("bytes=0-99", body[:100]), ("bytes=123456-234567", body[123456:234568]), ("bytes=-10", body[-10:])):
        was_hit, got = hit(Range=rng)
        assert was_hit and got == want, rng

    parts = [secrets.token_bytes(5 << 20), secrets.token_bytes(1 << 20)]
    up = s3b.create_multipart_upload(Bucket=bucket, Key="mp")
    etags = [s3b.upload_part(Bucket=bucket, Key="mp", UploadId=up["UploadId"], PartNumber=i + 1, Body=p)["ETag"]
             for i, p in enumerate(parts)]
    s3b.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up["UploadId"],
                                  MultipartUpload={"Parts": [{"ETag": e, "PartNumber": i + 1} for i, e in enumerate(etags)]})
    def whole_hit():
        # Every whole-object miss tries a fill; on a busy machine one may be
        # given up (a fill never waits for the disk), so ask again.
        r = s3a.get_object(Bucket=bucket, Key="mp")
        assert r["Body"].read() == b"".join(parts)
        return r["ResponseMetadata"]["HTTPHeaders"].get("x-facet-cache") == "hit"

    _wait(whole_hit, "the multipart object is cached")
    r = s3a.get_object(Bucket=bucket, Key="mp", PartNumber=2)
    assert r["ResponseMetadata"]["HTTPHeaders"].get("x-facet-cache") == "hit" and r["Body"].read() == parts[1]


def test_cache_survives_restart(facet_bin, tmp_path):
    """One `facet serve` (embedded store, bus and cache under its data
    directory): an entry filled before a restart is a hit after it."""
    srv = Server(facet_bin, tmp_path / "data", tmp_path / "facet.log")
    srv.start()
    try:
        creds = srv.create_tenant("restart")
        s3 = make_client(srv.endpoint, creds)
        s3.create_bucket(Bucket="warm")
        srv.ctl("policy", "add", "FOR BUCKET restart/warm DO SET caching WITH admit=put")
        body = secrets.token_bytes(200_000)
        s3.put_object(Bucket="warm", Key="k", Body=body)
        cache = lambda: s3.get_object(Bucket="warm", Key="k")["ResponseMetadata"]["HTTPHeaders"].get("x-facet-cache")
        _wait(lambda: cache() == "hit", "the PUT's admission is committed")
        srv.stop()
        srv.start()
        s3 = make_client(srv.endpoint, creds)
        r = s3.get_object(Bucket="warm", Key="k")
        assert r["ResponseMetadata"]["HTTPHeaders"].get("x-facet-cache") == "hit" and r["Body"].read() == body
    finally:
        srv.stop()


def test_select_filter_reads_the_cache(pair):
    """With caching and the select filter on one bucket, plain GETs return
    the selection, computed over the cached object once it is cached."""
    a, _, _ = pair
    _, s3a, s3b, bucket = _setup(pair, "sel", "FOR BUCKET {t}/{b} DO SET caching WITH admit=both, SET select WITH columns=\"id\", where=\"s.city = 'oslo'\"")
    rows = "id,city\n" + "".join(f"{i},{'oslo' if i % 3 == 0 else 'rome'}\n" for i in range(3000))
    s3b.put_object(Bucket=bucket, Key="people.csv", Body=rows.encode())
    want = [str(i) for i in range(0, 3000, 3)]
    before = _cache(a)["hits"]

    def selected():
        got = s3a.get_object(Bucket=bucket, Key="people.csv")["Body"].read().decode().split()
        assert got == want, got[:5]
        return _cache(a)["hits"] > before

    _wait(selected, "the selection is read from the cache")
