"""boto3 and the aws cli cleaning up as standard tools do: a bucket that
was never versioned lists its objects as their null versions, deletes them
by version, and is deleted with open multipart uploads still in it.
(test_versioning.py covers versioned buckets.)"""

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from conftest import REGION


def code(exc_info):
    return exc_info.value.response["Error"]["Code"]


def status(exc_info):
    return exc_info.value.response["ResponseMetadata"]["HTTPStatusCode"]


KEYS = sorted([f"dir{d}/f{f:02d}" for d in range(3) for f in range(7)] + ["a-top", "dir1x", "m-top", "z-top"])


def put_keys(s3, bucket, keys=KEYS):
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())


def open_upload(s3, bucket, key):
    up = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=1, Body=b"part one")
    return up


def test_delete_bucket_aborts_uploads(s3, bucket):
    put_keys(s3, bucket, ["k1", "k2"])
    ups = {key: open_upload(s3, bucket, key) for key in ["mp", "dir/mp"]}
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=bucket)
    assert code(e) == "BucketNotEmpty" and status(e) == 409
    assert len(s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])) == 2

    s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "k1"}, {"Key": "k2"}]})
    s3.delete_bucket(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=bucket)
    assert status(e) == 404

    # Made again, the bucket has none of the old uploads.
    s3.create_bucket(Bucket=bucket)
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key="mp", UploadId=ups["mp"], PartNumber=2, Body=b"late")
    assert code(e) == "NoSuchUpload"
    s3.delete_bucket(Bucket=bucket)


def test_list_object_versions_paging(s3, bucket):
    put_keys(s3, bucket)
    pages = list(s3.get_paginator("list_object_versions").paginate(Bucket=bucket, PaginationConfig={"PageSize": 4}))
    assert len(pages) == (len(KEYS) + 3) // 4
    versions = [v for p in pages for v in p.get("Versions", [])]
    assert [v["Key"] for v in versions] == KEYS
    listed = {o["Key"]: o for o in s3.list_objects_v2(Bucket=bucket)["Contents"]}
    for v in versions:
        assert v["VersionId"] == "null" and v["IsLatest"] is True, v
        o = listed[v["Key"]]
        assert (v["ETag"], v["Size"], v["LastModified"], v["StorageClass"]) == (o["ETag"], o["Size"], o["LastModified"], "STANDARD")
        assert v["Owner"]["ID"]
    assert not any(p.get("DeleteMarkers") for p in pages)
    for p in pages[:-1]:
        assert p["IsTruncated"] and p["NextKeyMarker"] and p["NextVersionIdMarker"] == "null", p

    # Delimiter and a page of two, by hand with the markers the last page gave.
    keys, prefixes, kw = [], [], {}
    while True:
        p = s3.list_object_versions(Bucket=bucket, Delimiter="/", MaxKeys=2, **kw)
        assert len(p.get("Versions", [])) + len(p.get("CommonPrefixes", [])) <= 2
        keys += [v["Key"] for v in p.get("Versions", [])]
        prefixes += [c["Prefix"] for c in p.get("CommonPrefixes", [])]
        if not p["IsTruncated"]:
            break
        kw = {"KeyMarker": p["NextKeyMarker"]}
        if p.get("NextVersionIdMarker"):
            kw["VersionIdMarker"] = p["NextVersionIdMarker"]
    assert keys == ["a-top", "dir1x", "m-top", "z-top"]
    assert prefixes == ["dir0/", "dir1/", "dir2/"]

    under = s3.list_object_versions(Bucket=bucket, Prefix="dir2/", MaxKeys=1000)
    assert [v["Key"] for v in under["Versions"]] == [k for k in KEYS if k.startswith("dir2/")]
    assert under["Prefix"] == "dir2/" and under["MaxKeys"] == 1000 and under["IsTruncated"] is False

    with pytest.raises(ClientError) as e:
        s3.list_object_versions(Bucket=bucket, KeyMarker="a-top", VersionIdMarker="bogus")
    assert code(e) == "InvalidArgument" and status(e) == 400


def test_object_versions_delete_cleans_up(server, tenant, s3, bucket):
    """The cleanup idiom of boto3's documentation and of test suites'
    tear-down: delete every version, then the bucket."""
    put_keys(s3, bucket)
    open_upload(s3, bucket, "left/open")
    res = boto3.resource(
        "s3", endpoint_url=server.endpoint, region_name=REGION,
        aws_access_key_id=tenant["access_key"], aws_secret_access_key=tenant["secret_key"],
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    b = res.Bucket(bucket)
    assert sorted(v.object_key for v in b.object_versions.all()) == KEYS
    out = b.object_versions.delete()
    deleted = [d for r in out for d in r.get("Deleted", [])]
    assert sorted(d["Key"] for d in deleted) == KEYS and all(d["VersionId"] == "null" for d in deleted)
    assert not any(r.get("Errors") for r in out)
    assert list(b.object_versions.all()) == []
    b.delete()
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=bucket)
    assert status(e) == 404


def test_version_id_null(s3, bucket):
    put_keys(s3, bucket, ["k", "other"])
    v = s3.get_bucket_versioning(Bucket=bucket)
    assert "Status" not in v and "MFADelete" not in v, v

    assert s3.get_object(Bucket=bucket, Key="k", VersionId="null")["Body"].read() == b"k"
    assert s3.head_object(Bucket=bucket, Key="k", VersionId="null")["ContentLength"] == 1
    # An id Facet never makes is refused as S3 refuses one; a well-formed
    # id the key does not have is NoSuchVersion.
    for call in (lambda: s3.get_object(Bucket=bucket, Key="k", VersionId="bogus"),
                 lambda: s3.delete_object(Bucket=bucket, Key="k", VersionId="bogus"),
                 lambda: s3.copy_object(Bucket=bucket, Key="c", CopySource={"Bucket": bucket, "Key": "k", "VersionId": "bogus"})):
        with pytest.raises(ClientError) as e:
            call()
        assert code(e) == "InvalidArgument" and status(e) == 400
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="k", VersionId="bogus")
    assert status(e) == 400
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="k", VersionId="f" * 32)
    assert code(e) == "NoSuchVersion" and status(e) == 404
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"k"

    s3.copy_object(Bucket=bucket, Key="c", CopySource={"Bucket": bucket, "Key": "k", "VersionId": "null"})
    assert s3.get_object(Bucket=bucket, Key="c")["Body"].read() == b"k"
    assert s3.delete_object(Bucket=bucket, Key="k", VersionId="null")["VersionId"] == "null"
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="k")
    assert status(e) == 404


def test_cli_list_object_versions(cli, s3, bucket):
    put_keys(s3, bucket, ["x/1", "x/2", "y"])
    out = cli.json("s3api", "list-object-versions", "--bucket", bucket, "--page-size", "1")
    assert [(v["Key"], v["VersionId"], v["IsLatest"]) for v in out["Versions"]] == \
        [("x/1", "null", True), ("x/2", "null", True), ("y", "null", True)]
    assert "Status" not in (cli.json("s3api", "get-bucket-versioning", "--bucket", bucket) or {})
    # `aws s3 rb --force` deletes the objects, then the bucket, open upload and all.
    open_upload(s3, bucket, "x/open")
    cli.run("s3", "rb", "--force", f"s3://{bucket}")
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=bucket)
    assert status(e) == 404
