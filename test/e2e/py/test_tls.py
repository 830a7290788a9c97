"""Facet's own TLS (--tls-cert/--tls-key) with real clients: boto3, the aws
cli and rclone over HTTPS, verifying against a CA made by the test; a client
without the CA is refused the certificate."""

import os
import shutil
import subprocess
import uuid

import botocore.exceptions
import pytest

from conftest import AwsCli, Server, make_client


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60, cwd=cwd)


@pytest.fixture(scope="module")
def tls_server(facet_bin, tmp_path_factory):
    """A facet serve with a certificate (serial 100) of a CA made here."""
    if not shutil.which("openssl"):
        pytest.fail("openssl is needed to make the test CA (apt-get install openssl)")
    d = tmp_path_factory.mktemp("tlsca")
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
             "-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=facet pytest CA",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign", cwd=d)
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1", cwd=d)
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-set_serial", "100",
             "-days", "1", "-extfile", "ext.cnf", "-out", "server.crt", cwd=d)
    srv = Server(facet_bin, d / "data", d / "facet.log",
                 extra_args=["--tls-cert", str(d / "server.crt"), "--tls-key", str(d / "server.key"), "--nbd-addr", "off"],
                 ca=str(d / "ca.crt"))
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def tls_tenant(tls_server):
    return tls_server.create_tenant("tls-" + uuid.uuid4().hex[:10])


def test_boto3_over_https(tls_server, tls_tenant):
    assert tls_server.endpoint.startswith("https://")
    s3 = make_client(tls_server.endpoint, tls_tenant, verify=tls_server.ca)
    name = "tls-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=name)
    body = b"sealed " * 50_000
    s3.put_object(Bucket=name, Key="k", Body=body)
    assert s3.get_object(Bucket=name, Key="k")["Body"].read() == body
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=name)["Contents"]] == ["k"]
    # The system's roots do not know the test CA.
    untrusting = make_client(tls_server.endpoint, tls_tenant)
    with pytest.raises(botocore.exceptions.SSLError):
        untrusting.list_buckets()


def test_awscli_over_https(tls_server, tls_tenant, tmp_path):
    cli = AwsCli(tls_server.endpoint, tls_tenant, tmp_path, ca_bundle=tls_server.ca)
    name = "tls-" + uuid.uuid4().hex[:12]
    cli.run("s3", "mb", f"s3://{name}")
    src = tmp_path / "big.bin"
    src.write_bytes(bytes(range(256)) * 40_000)  # ~10 MB: a multipart upload
    cli.run("s3", "cp", str(src), f"s3://{name}/big.bin")
    out = tmp_path / "back.bin"
    cli.run("s3", "cp", f"s3://{name}/big.bin", str(out))
    assert out.read_bytes() == src.read_bytes()
    assert "big.bin" in cli.run("s3", "ls", f"s3://{name}/").stdout
    # Without the CA bundle the cli refuses the certificate.
    plain = AwsCli(tls_server.endpoint, tls_tenant, tmp_path)
    res = plain.run("s3", "ls", check=False)
    assert res.returncode != 0 and "SSL" in res.stderr + res.stdout


def test_rclone_over_https(tls_server, tls_tenant, tmp_path):
    rclone = shutil.which("rclone")
    if not rclone:
        pytest.fail("rclone missing: scripts/ensure-deps.sh installs it (make test runs it)")
    conf = tmp_path / "rclone.conf"
    conf.write_text(
        "[facet]\n"
        "type = s3\n"
        "provider = Other\n"
        f"access_key_id = {tls_tenant['access_key']}\n"
        f"secret_access_key = {tls_tenant['secret_key']}\n"
        f"endpoint = {tls_server.endpoint}\n"
        "region = us-east-1\n"
        "force_path_style = true\n")
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    for i in range(5):
        (src / f"f{i}.txt").write_bytes(f"file {i} ".encode() * (1000 * (i + 1)))
    (src / "sub" / "deep.bin").write_bytes(bytes(range(256)) * 4096)
    name = "rc-" + uuid.uuid4().hex[:12]
    # rclone's S3 SDK fails on AWS_CA_BUNDLE (it cannot load a bundle into
    # rclone's transport); --ca-cert is rclone's own way.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}

    def run(*args, check=True):
        res = subprocess.run([rclone, "--config", str(conf), "--ca-cert", tls_server.ca, "--retries", "1", *args],
                             capture_output=True, text=True, timeout=300, env=env)
        if check and res.returncode != 0:
            raise AssertionError(f"rclone {' '.join(args)} exited {res.returncode}\n{res.stdout}\n{res.stderr}")
        return res

    run("mkdir", f"facet:{name}")
    run("copy", str(src), f"facet:{name}")
    listed = run("ls", f"facet:{name}").stdout
    for rel in ["f0.txt", "f4.txt", "sub/deep.bin"]:
        assert rel in listed, listed
    run("check", str(src), f"facet:{name}")
    # Without --ca-cert, rclone refuses the certificate.
    res = subprocess.run([rclone, "--config", str(conf), "--retries", "1", "--low-level-retries", "1", "ls", f"facet:{name}"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode != 0 and "certificate" in res.stderr, res.stderr
