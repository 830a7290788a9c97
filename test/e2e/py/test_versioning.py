"""Bucket versioning with boto3 and the aws cli, as the S3 User Guide's
versioning chapter shows it: overwrites keep the old versions, a DELETE
writes a delete marker, an old version is restored by copying it onto its
key, versions are listed page by page, a suspended bucket writes the null
version, and DeleteObjects deletes named versions."""

import concurrent.futures

import pytest
from botocore.exceptions import ClientError


def code(exc_info):
    return exc_info.value.response["Error"]["Code"]


def status(exc_info):
    return exc_info.value.response["ResponseMetadata"]["HTTPStatusCode"]


def headers(exc_info):
    return exc_info.value.response["ResponseMetadata"]["HTTPHeaders"]


def enable(s3, bucket, state="Enabled"):
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": state})


def body(s3, bucket, key, **kw):
    return s3.get_object(Bucket=bucket, Key=key, **kw)["Body"].read()


def all_versions(s3, bucket, **kw):
    out = []
    for p in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, **kw):
        out += [("V", v["Key"], v["VersionId"], v["IsLatest"]) for v in p.get("Versions", [])]
        out += [("D", d["Key"], d["VersionId"], d["IsLatest"]) for d in p.get("DeleteMarkers", [])]
    return out


def test_get_put_bucket_versioning(s3, bucket):
    assert "Status" not in s3.get_bucket_versioning(Bucket=bucket)
    enable(s3, bucket)
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"
    enable(s3, bucket, "Suspended")
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Suspended"
    with pytest.raises(ClientError) as e:
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled", "MFADelete": "Enabled"},
                                 MFA="arn:aws:iam::1:mfa/x 123456")
    assert code(e) == "NotImplemented" and "MFA" in e.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as e:
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled", "MFADelete": "Enabled"})
    assert code(e) == "NotImplemented" and "MFA Delete" in e.value.response["Error"]["Message"]
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Suspended"


def test_overwrite_keeps_versions_and_delete_marker(s3, bucket):
    enable(s3, bucket)
    ids = [s3.put_object(Bucket=bucket, Key="doc", Body=f"v{i}".encode())["VersionId"] for i in range(3)]
    assert len(set(ids)) == 3 and "null" not in ids
    assert body(s3, bucket, "doc") == b"v2"
    for i, vid in enumerate(ids):
        r = s3.get_object(Bucket=bucket, Key="doc", VersionId=vid)
        assert r["Body"].read() == f"v{i}".encode() and r["VersionId"] == vid
        assert s3.head_object(Bucket=bucket, Key="doc", VersionId=vid)["ContentLength"] == 2
    # Newest first.
    assert all_versions(s3, bucket) == [("V", "doc", ids[2], True), ("V", "doc", ids[1], False), ("V", "doc", ids[0], False)]

    d = s3.delete_object(Bucket=bucket, Key="doc")
    assert d["DeleteMarker"] is True and d["VersionId"] not in ids
    marker = d["VersionId"]
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="doc")
    assert code(e) == "NoSuchKey" and headers(e)["x-amz-delete-marker"] == "true"
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="doc")
    assert status(e) == 404 and headers(e)["x-amz-delete-marker"] == "true"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="doc", VersionId=marker)
    assert status(e) == 405 and headers(e)["x-amz-delete-marker"] == "true"
    assert "Contents" not in s3.list_objects_v2(Bucket=bucket)
    assert "Contents" not in s3.list_objects(Bucket=bucket)
    listing = s3.list_object_versions(Bucket=bucket)
    assert [(m["VersionId"], m["IsLatest"]) for m in listing["DeleteMarkers"]] == [(marker, True)]
    assert [v["IsLatest"] for v in listing["Versions"]] == [False, False, False]

    # Deleting the marker brings the object back.
    r = s3.delete_object(Bucket=bucket, Key="doc", VersionId=marker)
    assert r["DeleteMarker"] is True and r["VersionId"] == marker
    assert body(s3, bucket, "doc") == b"v2"
    # Deleting a version for good, the latest one too.
    s3.delete_object(Bucket=bucket, Key="doc", VersionId=ids[2])
    assert body(s3, bucket, "doc") == b"v1"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="doc", VersionId=ids[2])
    assert code(e) == "NoSuchVersion"
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["doc"]
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="doc", VersionId="not-a-version")
    assert code(e) == "InvalidArgument" and status(e) == 400

    # A versioned bucket with versions left is not empty.
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=bucket)
    assert code(e) == "BucketNotEmpty"


def test_restore_by_copying_old_version(s3, bucket):
    enable(s3, bucket)
    old = s3.put_object(Bucket=bucket, Key="k", Body=b"good", Metadata={"gen": "1"})["VersionId"]
    s3.put_object(Bucket=bucket, Key="k", Body=b"bad", Metadata={"gen": "2"})
    r = s3.copy_object(Bucket=bucket, Key="k", CopySource={"Bucket": bucket, "Key": "k", "VersionId": old})
    assert r["CopySourceVersionId"] == old and r["VersionId"] != old
    got = s3.get_object(Bucket=bucket, Key="k")
    assert got["Body"].read() == b"good" and got["Metadata"] == {"gen": "1"} and got["VersionId"] == r["VersionId"]
    assert len(all_versions(s3, bucket)) == 3
    # Range GET by version id.
    assert s3.get_object(Bucket=bucket, Key="k", VersionId=old, Range="bytes=1-2")["Body"].read() == b"oo"
    # A metadata-only copy onto itself is a new version too.
    s3.copy_object(Bucket=bucket, Key="k", CopySource={"Bucket": bucket, "Key": "k"},
                   MetadataDirective="REPLACE", Metadata={"gen": "3"})
    assert len(all_versions(s3, bucket)) == 4
    assert s3.head_object(Bucket=bucket, Key="k")["Metadata"] == {"gen": "3"}
    assert body(s3, bucket, "k", VersionId=old) == b"good"


def test_multipart_and_part_copy_by_version(s3, bucket):
    enable(s3, bucket)
    first = s3.put_object(Bucket=bucket, Key="src", Body=b"A" * (5 << 20))["VersionId"]
    s3.put_object(Bucket=bucket, Key="src", Body=b"B" * 10)
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]
    p1 = s3.upload_part_copy(Bucket=bucket, Key="mp", UploadId=up, PartNumber=1,
                             CopySource={"Bucket": bucket, "Key": "src", "VersionId": first})
    p2 = s3.upload_part(Bucket=bucket, Key="mp", UploadId=up, PartNumber=2, Body=b"tail")
    done = s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up, MultipartUpload={"Parts": [
        {"PartNumber": 1, "ETag": p1["CopyPartResult"]["ETag"]}, {"PartNumber": 2, "ETag": p2["ETag"]}]})
    assert done["VersionId"] and done["VersionId"] != "null"
    got = body(s3, bucket, "mp", VersionId=done["VersionId"])
    assert got == b"A" * (5 << 20) + b"tail"


def test_suspended_writes_null_version(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"before")  # the null version
    enable(s3, bucket)
    v1 = s3.put_object(Bucket=bucket, Key="k", Body=b"one")["VersionId"]
    enable(s3, bucket, "Suspended")
    r = s3.put_object(Bucket=bucket, Key="k", Body=b"n1")
    assert r["VersionId"] == "null"
    # The old null version was replaced; v1 stays.
    assert all_versions(s3, bucket) == [("V", "k", "null", True), ("V", "k", v1, False)]
    s3.put_object(Bucket=bucket, Key="k", Body=b"n2")
    assert all_versions(s3, bucket) == [("V", "k", "null", True), ("V", "k", v1, False)]
    assert body(s3, bucket, "k", VersionId="null") == b"n2" and body(s3, bucket, "k", VersionId=v1) == b"one"
    # A DELETE writes a null delete marker, replacing the null version.
    d = s3.delete_object(Bucket=bucket, Key="k")
    assert d["DeleteMarker"] is True and d["VersionId"] == "null"
    assert all_versions(s3, bucket) == [("V", "k", v1, False), ("D", "k", "null", True)]
    enable(s3, bucket)
    v3 = s3.put_object(Bucket=bucket, Key="k", Body=b"three")["VersionId"]
    assert all_versions(s3, bucket) == [("V", "k", v3, True), ("V", "k", v1, False), ("D", "k", "null", False)]


def test_delete_objects_with_versions(s3, bucket):
    enable(s3, bucket)
    a = [s3.put_object(Bucket=bucket, Key="a", Body=b"x")["VersionId"] for _ in range(2)]
    s3.put_object(Bucket=bucket, Key="b", Body=b"y")
    out = s3.delete_objects(Bucket=bucket, Delete={"Objects": [
        {"Key": "a", "VersionId": a[0]}, {"Key": "b"}]})
    assert not out.get("Errors")
    by = {d["Key"]: d for d in out["Deleted"]}
    assert by["a"]["VersionId"] == a[0] and "DeleteMarker" not in by["a"]
    assert by["b"]["DeleteMarker"] is True and by["b"]["DeleteMarkerVersionId"]
    marker = by["b"]["DeleteMarkerVersionId"]
    out = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "b", "VersionId": marker}]})
    assert out["Deleted"][0]["DeleteMarker"] is True and out["Deleted"][0]["DeleteMarkerVersionId"] == marker
    assert body(s3, bucket, "b") == b"y"
    # Every version deleted, the bucket can go.
    versions = all_versions(s3, bucket)
    s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k, "VersionId": v} for _, k, v, _ in versions]})
    assert all_versions(s3, bucket) == []
    s3.delete_bucket(Bucket=bucket)


def test_list_versions_paging_2500(s3, bucket):
    """2,500 versions over 50 keys, listed 7 at a time, with and without
    a delimiter."""
    enable(s3, bucket)
    keys = [f"p{k % 2}/k{k:02d}" for k in range(50)]

    def put(k):
        return [(k, s3.put_object(Bucket=bucket, Key=k, Body=b"v")["VersionId"]) for _ in range(50)]

    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        written = [v for vs in ex.map(put, keys) for v in vs]
    assert len(written) == 2500
    want = []
    for k in sorted(keys):
        want += [(k, v) for kk, v in reversed(written) if kk == k]
    pages = list(s3.get_paginator("list_object_versions").paginate(Bucket=bucket, PaginationConfig={"PageSize": 7}))
    got = [(v["Key"], v["VersionId"]) for p in pages for v in p.get("Versions", [])]
    assert got == want
    assert len(pages) == (2500 + 6) // 7
    latest = [(v["Key"], v["VersionId"]) for p in pages for v in p["Versions"] if v["IsLatest"]]
    assert latest == [(k, next(v for kk, v in reversed(written) if kk == k)) for k in sorted(keys)]
    p = s3.list_object_versions(Bucket=bucket, Delimiter="/")
    assert [c["Prefix"] for c in p["CommonPrefixes"]] == ["p0/", "p1/"] and "Versions" not in p
    under = all_versions(s3, bucket, Prefix="p1/k0")
    assert {k for _, k, _, _ in under} == {"p1/k01", "p1/k03", "p1/k05", "p1/k07", "p1/k09"}


def test_cli_put_bucket_versioning_and_list(cli, s3, bucket):
    cli.run("s3api", "put-bucket-versioning", "--bucket", bucket, "--versioning-configuration", "Status=Enabled")
    assert cli.json("s3api", "get-bucket-versioning", "--bucket", bucket)["Status"] == "Enabled"
    ids = [s3.put_object(Bucket=bucket, Key="f", Body=b"x")["VersionId"] for _ in range(3)]
    cli.run("s3api", "delete-object", "--bucket", bucket, "--key", "f")
    out = cli.json("s3api", "list-object-versions", "--bucket", bucket, "--page-size", "1")
    assert [v["VersionId"] for v in out["Versions"]] == ids[::-1]
    assert len(out["DeleteMarkers"]) == 1 and out["DeleteMarkers"][0]["IsLatest"] is True


def test_other_tenant_refused(s3, other_s3, bucket):
    enable(s3, bucket)
    vid = s3.put_object(Bucket=bucket, Key="k", Body=b"x")["VersionId"]
    for call in (lambda: other_s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Suspended"}),
                 lambda: other_s3.get_bucket_versioning(Bucket=bucket),
                 lambda: other_s3.list_object_versions(Bucket=bucket),
                 lambda: other_s3.get_object(Bucket=bucket, Key="k", VersionId=vid),
                 lambda: other_s3.delete_object(Bucket=bucket, Key="k", VersionId=vid),
                 lambda: other_s3.copy_object(Bucket=other_s3._own_bucket, Key="c",
                                              CopySource={"Bucket": bucket, "Key": "k", "VersionId": vid})):
        with pytest.raises(ClientError) as e:
            call()
        assert code(e) == "AccessDenied", call
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"
    assert body(s3, bucket, "k", VersionId=vid) == b"x"


@pytest.fixture
def other_s3(server, other_tenant):
    from conftest import make_client
    import uuid
    c = make_client(server.endpoint, other_tenant)
    c._own_bucket = "o-" + uuid.uuid4().hex[:16]
    c.create_bucket(Bucket=c._own_bucket)
    return c


def test_recycle_bin_leaves_versioned_buckets_to_their_versions(server, tenant, s3):
    """A recycle_bin policy is in force on both buckets: the never-versioned
    one's DELETE goes to the bin, the versioned one's writes a delete marker
    and the bin keeps nothing of it."""
    import json
    import uuid
    plain, versioned = "rb-" + uuid.uuid4().hex[:12], "rv-" + uuid.uuid4().hex[:12]
    for b in (plain, versioned):
        s3.create_bucket(Bucket=b)
    enable(s3, versioned)
    server.ctl("policy", "add", f"FOR TENANT {tenant['tenant']} DO SET recycle_bin WITH max_time=1d")
    for b in (plain, versioned):
        s3.put_object(Bucket=b, Key="doc", Body=b"kept")
        s3.delete_object(Bucket=b, Key="doc")
    items = json.loads(server.ctl("trash", "list", tenant["tenant"], "-o", "json"))
    items = items.get("items", items) if isinstance(items, dict) else items
    assert [(i["bucket"], i["key"]) for i in items] == [(plain, "doc")], items
    versions = s3.list_object_versions(Bucket=versioned)
    assert [m["IsLatest"] for m in versions["DeleteMarkers"]] == [True]
    assert body(s3, versioned, "doc", VersionId=versions["Versions"][0]["VersionId"]) == b"kept"
