"""The aws cli (this venv's) against a real `facet serve`."""

import datetime
import filecmp
import hashlib
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

import pytest

from conftest import AwsCli

MiB = 1024 * 1024


def new_name():
    return "cli-" + uuid.uuid4().hex[:16]


def write(path, n, seed):
    path.parent.mkdir(parents=True, exist_ok=True)
    out = bytearray()
    block = hashlib.sha256(seed.encode()).digest()
    while len(out) < n:
        out += block
        block = hashlib.sha256(block).digest()
    path.write_bytes(bytes(out[:n]))
    return path


def test_mb_cp_ls_rm_rb(cli, tmp_path):
    b = new_name()
    cli.run("s3", "mb", f"s3://{b}")
    assert b in cli.run("s3", "ls").stdout
    src = write(tmp_path / "in" / "hello.txt", 1234, "hello")
    cli.run("s3", "cp", str(src), f"s3://{b}/dir/hello world.txt")
    ls = cli.run("s3", "ls", f"s3://{b}/dir/").stdout
    assert "hello world.txt" in ls and "1234" in ls
    dst = tmp_path / "out.txt"
    cli.run("s3", "cp", f"s3://{b}/dir/hello world.txt", str(dst))
    assert filecmp.cmp(src, dst, shallow=False)

    res = cli.run("s3", "rb", f"s3://{b}", check=False)
    assert res.returncode != 0 and "BucketNotEmpty" in res.stderr
    cli.run("s3", "rm", f"s3://{b}/dir/hello world.txt")
    assert cli.run("s3", "ls", f"s3://{b}/", check=False).stdout.strip() == ""
    cli.run("s3", "rb", f"s3://{b}")
    assert b not in cli.run("s3", "ls").stdout


@pytest.mark.parametrize("transport", ["http", "https"])
def test_multipart_cp_5_parts(transport, cli, cli_tls, tmp_path):
    """aws s3 cp of 25 MiB with a 5 MB chunk size: five parts of 5 MiB."""
    c = cli if transport == "http" else cli_tls
    b = new_name()
    c.run("s3", "mb", f"s3://{b}")
    src = write(tmp_path / "big.bin", 25 * MiB, "cli-multipart")
    c.run("s3", "cp", str(src), f"s3://{b}/big.bin")
    head = c.json("s3api", "head-object", "--bucket", b, "--key", "big.bin")
    assert head["ContentLength"] == 25 * MiB
    body = src.read_bytes()
    digests = b"".join(hashlib.md5(body[i:i + 5 * MiB]).digest() for i in range(0, len(body), 5 * MiB))
    assert head["ETag"] == '"%s-5"' % hashlib.md5(digests).hexdigest()
    back = tmp_path / "back.bin"
    c.run("s3", "cp", f"s3://{b}/big.bin", str(back))
    assert filecmp.cmp(src, back, shallow=False)
    assert not c.json("s3api", "list-multipart-uploads", "--bucket", b).get("Uploads")


def test_sync_both_ways(cli, tmp_path):
    b = new_name()
    cli.run("s3", "mb", f"s3://{b}")
    local = tmp_path / "tree"
    files = {"a.txt": 10, "sub/b.bin": 70_000, "sub/deeper/c.bin": 0, "space dir/ü.txt": 33}
    for rel, n in files.items():
        write(local / rel, n, rel)
    cli.run("s3", "sync", str(local), f"s3://{b}/tree")
    listed = cli.run("s3", "ls", "--recursive", f"s3://{b}/").stdout
    for rel in files:
        assert f"tree/{rel}" in listed, rel

    # Change one file, remove another: sync uploads the change and --delete removes.
    time.sleep(1.1)  # sync compares mtimes at one-second resolution
    write(local / "a.txt", 11, "changed")
    (local / "sub" / "b.bin").unlink()
    out = cli.run("s3", "sync", "--delete", str(local), f"s3://{b}/tree").stdout
    assert "a.txt" in out and "delete:" in out
    listed = cli.run("s3", "ls", "--recursive", f"s3://{b}/").stdout
    assert "tree/sub/b.bin" not in listed

    down = tmp_path / "down"
    cli.run("s3", "sync", f"s3://{b}/tree", str(down))
    for rel in ["a.txt", "sub/deeper/c.bin", "space dir/ü.txt"]:
        assert filecmp.cmp(local / rel, down / rel, shallow=False), rel
    assert not (down / "sub" / "b.bin").exists()


def test_s3api_listing_and_errors(cli, tmp_path):
    b = new_name()
    cli.run("s3api", "create-bucket", "--bucket", b)
    src = write(tmp_path / "f", 100, "x")
    for d in range(3):
        for f in range(7):
            cli.run("s3api", "put-object", "--bucket", b, "--key", f"dir{d}/f{f}", "--body", str(src))
    out = cli.json("s3api", "list-objects-v2", "--bucket", b, "--delimiter", "/", "--page-size", "2")
    assert [p["Prefix"] for p in out["CommonPrefixes"]] == ["dir0/", "dir1/", "dir2/"]
    out = cli.json("s3api", "list-objects-v2", "--bucket", b, "--prefix", "dir1/", "--page-size", "3")
    assert [o["Key"] for o in out["Contents"]] == [f"dir1/f{f}" for f in range(7)]
    out = cli.json("s3api", "list-objects", "--bucket", b, "--page-size", "4")
    assert len(out["Contents"]) == 21

    res = cli.run("s3api", "get-object", "--bucket", b, "--key", "nope", str(tmp_path / "nope"), check=False)
    assert res.returncode != 0 and "NoSuchKey" in res.stderr
    res = cli.run("s3api", "get-object", "--bucket", b, "--key", "dir0/f0", "--range", "bytes=500-", str(tmp_path / "r"), check=False)
    assert res.returncode != 0 and "InvalidRange" in res.stderr
    cli.run("s3api", "get-object", "--bucket", b, "--key", "dir0/f0", "--range", "bytes=-10", str(tmp_path / "r"))
    assert (tmp_path / "r").read_bytes() == src.read_bytes()[-10:]
    res = cli.run("s3api", "create-bucket", "--bucket", b, check=False)
    assert res.returncode != 0 and "BucketAlreadyOwnedByYou" in res.stderr
    res = cli.run("s3api", "create-bucket", "--bucket", "Invalid_Name", check=False)
    assert res.returncode != 0 and "InvalidBucketName" in res.stderr
    cli.run("s3api", "copy-object", "--bucket", b, "--key", "copied", "--copy-source", f"{b}/dir2/f6")
    head = cli.json("s3api", "head-object", "--bucket", b, "--key", "copied")
    assert head["ContentLength"] == 100


def test_presign_expiry(cli, tmp_path):
    b = new_name()
    cli.run("s3", "mb", f"s3://{b}")
    src = write(tmp_path / "p", 64, "presign")
    cli.run("s3", "cp", str(src), f"s3://{b}/p")
    # Long enough for the first GET on a loaded machine (the aws cli
    # alone takes a second or more to start).
    expires = 10
    url = cli.run("s3", "presign", f"s3://{b}/p", "--expires-in", str(expires)).stdout.strip()
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.read() == src.read_bytes()
    # Past the expiry the URL itself states (X-Amz-Date is whole seconds).
    amz_date = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["X-Amz-Date"][0]
    signed = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()
    time.sleep(max(0, signed + expires + 1.5 - time.time()))
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url, timeout=10)
    assert e.value.code == 403


def test_cross_tenant_and_bad_credentials(cli, server, other_tenant, tenant, tmp_path):
    b = new_name()
    cli.run("s3", "mb", f"s3://{b}")
    src = write(tmp_path / "s", 10, "secret")
    cli.run("s3", "cp", str(src), f"s3://{b}/secret")

    (tmp_path / "intruder").mkdir()
    intruder = AwsCli(server.endpoint, other_tenant, tmp_path / "intruder")
    for args in (["s3", "ls", f"s3://{b}/"],
                 ["s3", "cp", f"s3://{b}/secret", str(tmp_path / "stolen")],
                 ["s3", "cp", str(src), f"s3://{b}/planted"],
                 ["s3", "rm", f"s3://{b}/secret"],
                 ["s3", "rb", f"s3://{b}"]):
        res = intruder.run(*args, check=False)
        assert res.returncode != 0, args
        assert "AccessDenied" in res.stderr or "403" in res.stderr, (args, res.stderr)
    assert b not in intruder.run("s3", "ls").stdout
    assert not (tmp_path / "stolen").exists()

    wrong = dict(tenant, secret_key="not-" + tenant["secret_key"])
    (tmp_path / "wrong").mkdir()
    res = AwsCli(server.endpoint, wrong, tmp_path / "wrong").run("s3", "ls", check=False)
    assert res.returncode != 0 and "SignatureDoesNotMatch" in res.stderr
    listed = cli.run("s3", "ls", f"s3://{b}/").stdout
    assert "secret" in listed and "planted" not in listed

