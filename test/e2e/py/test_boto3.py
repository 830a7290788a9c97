"""boto3 against a real `facet serve`."""

import base64
import datetime
import hashlib
import io
import time
import urllib.error
import urllib.request
import uuid
import zlib

import boto3.s3.transfer
import botocore.auth
import pytest
from botocore.exceptions import ClientError

from conftest import make_client

MiB = 1024 * 1024


def code(exc_info):
    return exc_info.value.response["Error"]["Code"]


def status(exc_info):
    return exc_info.value.response["ResponseMetadata"]["HTTPStatusCode"]


def data(seed, n):
    out = bytearray()
    block = hashlib.sha256(seed.encode()).digest()
    while len(out) < n:
        out += block
        block = hashlib.sha256(block).digest()
    return bytes(out[:n])


def multipart_etag(body, part):
    digests = [hashlib.md5(body[i:i + part]).digest() for i in range(0, len(body), part)]
    return '"%s-%d"' % (hashlib.md5(b"".join(digests)).hexdigest(), len(digests))


def new_name():
    return "b-" + uuid.uuid4().hex[:16]


def test_bucket_lifecycle(s3, server, other_tenant):
    name = new_name()
    s3.create_bucket(Bucket=name)
    s3.head_bucket(Bucket=name)
    other = make_client(server.endpoint, other_tenant)
    other_bucket = new_name()
    other.create_bucket(Bucket=other_bucket)

    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert names == [name], "ListBuckets shows only the tenant's own buckets"
    loc = s3.get_bucket_location(Bucket=name)["LocationConstraint"]
    assert loc in (None, "", "us-east-1")

    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket=name)
    assert code(e) == "BucketAlreadyOwnedByYou" and status(e) == 409
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket=other_bucket)
    assert code(e) == "BucketAlreadyExists" and status(e) == 409
    for bad in ["ab", "UpperCase", "under_score", "-leading", "double..dot", "192.168.1.1", "a" * 64]:
        with pytest.raises(ClientError) as e:
            s3.create_bucket(Bucket=bad)
        assert code(e) == "InvalidBucketName", bad

    s3.put_object(Bucket=name, Key="k", Body=b"x")
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=name)
    assert code(e) == "BucketNotEmpty" and status(e) == 409
    s3.delete_object(Bucket=name, Key="k")
    s3.delete_bucket(Bucket=name)
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=name)
    assert status(e) == 404
    with pytest.raises(ClientError) as e:
        s3.list_objects_v2(Bucket=name)
    assert code(e) == "NoSuchBucket"


def test_put_get_head_range_copy_delete(s3, bucket):
    body = data("boto3-object", 200_000)
    put = s3.put_object(Bucket=bucket, Key="dir/obj", Body=body, ContentType="application/x-test",
                        ContentDisposition='attachment; filename="o.bin"', CacheControl="max-age=5",
                        Metadata={"color": "green", "note": "hello world"})
    assert put["ETag"] == '"%s"' % hashlib.md5(body).hexdigest()

    got = s3.get_object(Bucket=bucket, Key="dir/obj")
    assert got["Body"].read() == body
    assert got["ContentType"] == "application/x-test"
    assert got["ContentDisposition"] == 'attachment; filename="o.bin"'
    assert got["CacheControl"] == "max-age=5"
    assert got["Metadata"] == {"color": "green", "note": "hello world"}
    assert got["ETag"] == put["ETag"]
    head = s3.head_object(Bucket=bucket, Key="dir/obj")
    assert head["ContentLength"] == len(body) and head["Metadata"]["color"] == "green"

    for rng, want, content_range in [
        ("bytes=0-9", body[:10], "bytes 0-9/200000"),
        ("bytes=-10", body[-10:], "bytes 199990-199999/200000"),
        ("bytes=199995-", body[199995:], "bytes 199995-199999/200000"),
        ("bytes=100-299999", body[100:], "bytes 100-199999/200000"),
    ]:
        r = s3.get_object(Bucket=bucket, Key="dir/obj", Range=rng)
        assert r["ResponseMetadata"]["HTTPStatusCode"] == 206, rng
        assert r["Body"].read() == want, rng
        assert r["ContentRange"] == content_range, rng
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="dir/obj", Range="bytes=200000-")
    assert code(e) == "InvalidRange" and status(e) == 416

    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="dir/obj", IfNoneMatch=put["ETag"])
    assert status(e) == 304
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="dir/obj", IfMatch='"0000"')
    assert code(e) == "PreconditionFailed" and status(e) == 412
    r = s3.get_object(Bucket=bucket, Key="dir/obj", ResponseContentType="text/x-override")
    assert r["ContentType"] == "text/x-override"

    s3.copy_object(Bucket=bucket, Key="copy-keep", CopySource={"Bucket": bucket, "Key": "dir/obj"})
    c = s3.get_object(Bucket=bucket, Key="copy-keep")
    assert c["Body"].read() == body and c["Metadata"]["color"] == "green" and c["ContentType"] == "application/x-test"
    s3.copy_object(Bucket=bucket, Key="copy-new", CopySource={"Bucket": bucket, "Key": "dir/obj"},
                   MetadataDirective="REPLACE", Metadata={"fresh": "1"}, ContentType="text/plain")
    c = s3.get_object(Bucket=bucket, Key="copy-new")
    assert c["Body"].read() == body and c["Metadata"] == {"fresh": "1"} and c["ContentType"] == "text/plain"

    res = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "copy-keep"}, {"Key": "copy-new"}, {"Key": "missing"}]})
    assert sorted(d["Key"] for d in res["Deleted"]) == ["copy-keep", "copy-new", "missing"]
    assert not res.get("Errors")
    s3.delete_object(Bucket=bucket, Key="dir/obj")
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="dir/obj")
    assert code(e) == "NoSuchKey" and status(e) == 404
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 0


def test_listing_pages_with_delimiter(s3, bucket):
    keys = [f"d{d}/s{s}/f{f:02d}" for d in range(6) for s in range(4) for f in range(12)]
    specials = ["top one", "top+plus", "tôp/ünï", "top%25"]
    for k in keys + specials:
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())

    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, PaginationConfig={"PageSize": 25})
    seen = []
    npages = 0
    for page in pages:
        npages += 1
        assert page["KeyCount"] <= 25
        seen += [o["Key"] for o in page.get("Contents", [])]
    assert seen == sorted(keys + specials), "every key exactly once, in order"
    assert npages == -(-len(seen) // 25)

    prefixes, contents = [], []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Delimiter="/", PaginationConfig={"PageSize": 2}):
        prefixes += [p["Prefix"] for p in page.get("CommonPrefixes", [])]
        contents += [o["Key"] for o in page.get("Contents", [])]
    assert prefixes == [f"d{d}/" for d in range(6)] + ["tôp/"]
    assert contents == sorted(["top one", "top+plus", "top%25"])

    sub = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="d3/", Delimiter="/", PaginationConfig={"PageSize": 3}):
        sub += [p["Prefix"] for p in page.get("CommonPrefixes", [])]
    assert sub == [f"d3/s{s}/" for s in range(4)]

    # v1 with markers (boto3's paginator follows NextMarker / the last key).
    v1 = []
    for page in s3.get_paginator("list_objects").paginate(Bucket=bucket, PaginationConfig={"PageSize": 40}):
        v1 += [o["Key"] for o in page.get("Contents", [])]
    assert v1 == sorted(keys + specials)
    after = s3.list_objects_v2(Bucket=bucket, StartAfter="d5/s3/f11")
    assert [o["Key"] for o in after["Contents"]] == sorted(specials)


def test_multipart_upload_manager(s3tls, bucket):
    body = data("boto3-multipart", 26 * MiB)
    cfg = boto3.s3.transfer.TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB, max_concurrency=3)
    s3tls.upload_fileobj(io.BytesIO(body), bucket, "big", Config=cfg)
    head = s3tls.head_object(Bucket=bucket, Key="big")
    assert head["ETag"] == multipart_etag(body, 5 * MiB)
    assert head["ContentLength"] == len(body)
    out = io.BytesIO()
    s3tls.download_fileobj(bucket, "big", out, Config=cfg)
    assert hashlib.md5(out.getvalue()).hexdigest() == hashlib.md5(body).hexdigest()


def test_multipart_low_level(s3, bucket):
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]
    p1 = data("p1", 5 * MiB)
    p2 = b"tail"
    e1 = s3.upload_part(Bucket=bucket, Key="mp", UploadId=up, PartNumber=1, Body=p1)["ETag"]
    e2 = s3.upload_part(Bucket=bucket, Key="mp", UploadId=up, PartNumber=2, Body=p2)["ETag"]
    parts = s3.list_parts(Bucket=bucket, Key="mp", UploadId=up)["Parts"]
    assert [(p["PartNumber"], p["Size"]) for p in parts] == [(1, len(p1)), (2, len(p2))]
    assert [u["UploadId"] for u in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])] == [up]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up,
                                     MultipartUpload={"Parts": [{"PartNumber": 2, "ETag": e2}, {"PartNumber": 1, "ETag": e1}]})
    assert code(e) == "InvalidPartOrder"
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up,
                                     MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": '"%s"' % ("0" * 32)}]})
    assert code(e) == "InvalidPart"
    done = s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up,
                                        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    assert done["ETag"] == multipart_etag(p1 + p2, 5 * MiB)
    assert s3.get_object(Bucket=bucket, Key="mp")["Body"].read() == p1 + p2

    ab = s3.create_multipart_upload(Bucket=bucket, Key="aborted")["UploadId"]
    s3.upload_part(Bucket=bucket, Key="aborted", UploadId=ab, PartNumber=1, Body=b"x")
    s3.abort_multipart_upload(Bucket=bucket, Key="aborted", UploadId=ab)
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket=bucket, Key="aborted", UploadId=ab)
    assert code(e) == "NoSuchUpload"
    assert not s3.list_multipart_uploads(Bucket=bucket).get("Uploads")


# CRC32C needs botocore[crt] (awscrt), which would also switch s3transfer to
# the CRT client; the Go tests cover CRC32C.
@pytest.mark.parametrize("algorithm", [None, "CRC32", "SHA1", "SHA256"])
def test_checksums_trailer(s3tls, bucket, algorithm):
    body = data(f"checksum-{algorithm}", 300_000)
    kwargs = {"ChecksumAlgorithm": algorithm} if algorithm else {}
    sent = {}

    def record(request, **_):
        sent.update({k.lower(): v for k, v in request.headers.items()})

    s3tls.meta.events.register("before-send.s3.PutObject", record)
    s3tls.put_object(Bucket=bucket, Key="k", Body=body, **kwargs)
    mode = sent.get("x-amz-content-sha256")
    assert mode in (b"STREAMING-UNSIGNED-PAYLOAD-TRAILER", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"), sent
    got = s3tls.get_object(Bucket=bucket, Key="k", ChecksumMode="ENABLED")
    assert got["Body"].read() == body
    alg = algorithm or "CRC32"  # boto3's default
    want = {
        "CRC32": base64.b64encode(zlib.crc32(body).to_bytes(4, "big")).decode(),
        "SHA1": base64.b64encode(hashlib.sha1(body).digest()).decode(),
        "SHA256": base64.b64encode(hashlib.sha256(body).digest()).decode(),
    }[alg]
    assert got.get("Checksum" + alg) == want


def test_bad_digest_stores_nothing(s3, bucket):
    s3.put_object(Bucket=bucket, Key="existing", Body=b"old")
    for key in ["new", "existing"]:
        with pytest.raises(ClientError) as e:
            s3.put_object(Bucket=bucket, Key=key, Body=b"payload",
                          ContentMD5=base64.b64encode(hashlib.md5(b"other").digest()).decode())
        assert code(e) == "BadDigest"
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="new")
    assert status(e) == 404
    assert s3.get_object(Bucket=bucket, Key="existing")["Body"].read() == b"old"


def test_presigned_get_expiry(s3, bucket):
    s3.put_object(Bucket=bucket, Key="shared file", Body=b"shared")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "shared file"}, ExpiresIn=2)
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200 and r.read() == b"shared"
    put_url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "via-url"}, ExpiresIn=60)
    req = urllib.request.Request(put_url, data=b"uploaded", method="PUT")
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200
    assert s3.get_object(Bucket=bucket, Key="via-url")["Body"].read() == b"uploaded"
    time.sleep(3)
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url, timeout=10)
    assert e.value.code == 403
    assert b"<Code>AccessDenied</Code>" in e.value.read()


def test_cross_tenant_denial(s3, bucket, server, other_tenant):
    s3.put_object(Bucket=bucket, Key="secret", Body=b"mine")
    intruder = make_client(server.endpoint, other_tenant)
    calls = {
        "list_objects_v2": lambda: intruder.list_objects_v2(Bucket=bucket),
        "get_object": lambda: intruder.get_object(Bucket=bucket, Key="secret"),
        "put_object": lambda: intruder.put_object(Bucket=bucket, Key="planted", Body=b"x"),
        "overwrite": lambda: intruder.put_object(Bucket=bucket, Key="secret", Body=b"x"),
        "delete_object": lambda: intruder.delete_object(Bucket=bucket, Key="secret"),
        "delete_objects": lambda: intruder.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "secret"}]}),
        "delete_bucket": lambda: intruder.delete_bucket(Bucket=bucket),
        "create_multipart_upload": lambda: intruder.create_multipart_upload(Bucket=bucket, Key="planted"),
    }
    for name, call in calls.items():
        with pytest.raises(ClientError) as e:
            call()
        assert (code(e), status(e)) == ("AccessDenied", 403), name
    for name, call in {"head_object": lambda: intruder.head_object(Bucket=bucket, Key="secret"),
                       "head_bucket": lambda: intruder.head_bucket(Bucket=bucket)}.items():
        with pytest.raises(ClientError) as e:
            call()
        assert status(e) == 403, name
    own = new_name()
    intruder.create_bucket(Bucket=own)
    with pytest.raises(ClientError) as e:
        intruder.copy_object(Bucket=own, Key="stolen", CopySource={"Bucket": bucket, "Key": "secret"})
    assert code(e) == "AccessDenied"
    assert [b["Name"] for b in intruder.list_buckets()["Buckets"]] == [own]
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["secret"]
    assert s3.get_object(Bucket=bucket, Key="secret")["Body"].read() == b"mine"


def test_wrong_credentials(server, tenant, bucket):
    wrong = dict(tenant, secret_key=tenant["secret_key"][:-1] + ("x" if tenant["secret_key"][-1] != "x" else "y"))
    with pytest.raises(ClientError) as e:
        make_client(server.endpoint, wrong).list_objects_v2(Bucket=bucket)
    assert (code(e), status(e)) == ("SignatureDoesNotMatch", 403)
    with pytest.raises(ClientError) as e:
        make_client(server.endpoint, wrong).put_object(Bucket=bucket, Key="k", Body=b"x")
    assert code(e) == "SignatureDoesNotMatch"
    unknown = dict(tenant, access_key="AKIDPYNOSUCHKEY00000")
    with pytest.raises(ClientError) as e:
        make_client(server.endpoint, unknown).list_buckets()
    assert (code(e), status(e)) == ("InvalidAccessKeyId", 403)
    assert make_client(server.endpoint, tenant).list_objects_v2(Bucket=bucket)["KeyCount"] == 0


@pytest.mark.parametrize("minutes", [-20, 20])
def test_skewed_clock(server, tenant, bucket, monkeypatch, minutes):
    real = botocore.auth.get_current_datetime

    def skewed():
        return real() + datetime.timedelta(minutes=minutes)

    monkeypatch.setattr(botocore.auth, "get_current_datetime", skewed)
    client = make_client(server.endpoint, tenant)
    with pytest.raises(ClientError) as e:
        client.list_objects_v2(Bucket=bucket)
    assert (code(e), status(e)) == ("RequestTimeTooSkewed", 403)
    with pytest.raises(ClientError) as e:
        client.put_object(Bucket=bucket, Key="skewed", Body=b"x")
    assert code(e) == "RequestTimeTooSkewed"
    monkeypatch.undo()
    with pytest.raises(ClientError) as e:
        make_client(server.endpoint, tenant).head_object(Bucket=bucket, Key="skewed")
    assert status(e) == 404
