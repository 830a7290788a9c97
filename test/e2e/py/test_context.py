"""Application context from boto3 with the clients/python helper: requests
inside a `with facet_context(...)` block are classified into that class (one
flow per tenant x class, measured separately); a malformed header gets 400
InvalidArgument; requests outside any block go to the default class."""

import json
import os
import sys
import uuid

import botocore.exceptions
import pytest

from conftest import make_client

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "clients", "python"))
from facet_context import facet_context, install, render  # noqa: E402


def flows(server):
    out = json.loads(server.ctl("context", "flows", "-o", "json"))
    return {f["tenant"] + "/" + f["class"]: f for f in out["flows"]}


def test_render():
    assert render(workflow="etl-42", class_="compaction") == "workflow=etl-42; class=compaction"
    assert render() == ""


def test_boto3_context_block(server, tenant):
    s3 = install(make_client(server.endpoint, tenant))
    bucket = "ctx-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="k", Body=b"x" * 100_000)
    with facet_context(workflow="etl-42", class_="compaction"):
        assert len(s3.get_object(Bucket=bucket, Key="k")["Body"].read()) == 100_000
        with facet_context(class_="flush"):  # nested: the inner block wins
            s3.get_object(Bucket=bucket, Key="k")["Body"].read()
        s3.head_object(Bucket=bucket, Key="k")
    s3.get_object(Bucket=bucket, Key="k")["Body"].read()  # outside: default class
    f = flows(server)
    t = tenant["tenant"]
    assert f[t + "/compaction"]["requests"] == 2
    assert f[t + "/compaction"]["served"] >= 100_000
    assert f[t + "/flush"]["requests"] == 1
    # create_bucket and put_object ran outside any block too.
    assert f[t + "/default"]["requests"] == 3


def test_boto3_malformed_context(server, s3, bucket):
    install(s3)
    with facet_context(class_="Not A Class"):
        with pytest.raises(botocore.exceptions.ClientError) as e:
            s3.head_object(Bucket=bucket, Key="k")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    with facet_context(class_="UPPER"):
        with pytest.raises(botocore.exceptions.ClientError) as e:
            s3.list_objects_v2(Bucket=bucket)
    assert e.value.response["Error"]["Code"] == "InvalidArgument"
    assert "class" in e.value.response["Error"]["Message"]
