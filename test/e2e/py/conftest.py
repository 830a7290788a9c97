"""Fixtures for Facet's Python end-to-end tests.

A session-wide `facet serve` runs from bin/facet (or $FACET_BIN) on free
loopback ports in a temporary directory. Tenants come from `facet ctl ...
tenant create NAME -o json`. Clients are boto3 and the aws cli of this venv.

boto3 and the aws cli only send STREAMING-UNSIGNED-PAYLOAD-TRAILER (their
default upload mode, with a CRC32 trailer) over HTTPS, so a small TLS proxy
with a self-signed certificate sits in front of the server for the tests that
want that mode.
"""

import json
import os
import secrets
import shutil
import select
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import boto3
import pytest
from botocore.config import Config

REPO = Path(__file__).resolve().parents[3]
REGION = "us-east-1"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A `facet serve`; with ca (a CA file), it serves TLS (extra_args name
    the certificate) and its clients verify against ca."""

    def __init__(self, binary, data_dir, log_path, extra_args=(), ca=None):
        self.binary = binary
        self.data_dir = data_dir
        self.log_path = log_path
        self.token = "py-e2e-" + secrets.token_hex(16)
        self.proc = None
        self.extra_args = list(extra_args)
        self.ca = ca
        self.scheme = "https" if ca else "http"

    def start(self):
        for _ in range(3):
            self.s3_addr = f"127.0.0.1:{_free_port()}"
            self.admin_addr = f"127.0.0.1:{_free_port()}"
            log = open(self.log_path, "ab")
            self.proc = subprocess.Popen(
                [self.binary, "serve", "--data", str(self.data_dir),
                 "--s3-addr", self.s3_addr, "--admin-addr", self.admin_addr,
                 "--admin-token", self.token, *self.extra_args],
                stdout=log, stderr=log, stdin=subprocess.DEVNULL)
            log.close()
            if self._wait_healthy(30):
                return
            self.stop()
        raise RuntimeError("facet serve did not become healthy; log:\n" + self.log_tail())

    def _wait_healthy(self, timeout):
        deadline = time.monotonic() + timeout
        ctx = ssl.create_default_context(cafile=self.ca) if self.ca else None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"{self.scheme}://{self.admin_addr}/healthz", timeout=2, context=ctx) as r:
                    if r.status == 200:
                        return True
            except OSError:
                pass
            time.sleep(0.05)
        return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log_tail(self, n=40):
        try:
            return "\n".join(Path(self.log_path).read_text(errors="replace").splitlines()[-n:])
        except OSError as e:
            return f"(no log: {e})"

    @property
    def endpoint(self):
        return f"{self.scheme}://{self.s3_addr}"

    def ctl(self, *args):
        ca = ["--ca", self.ca] if self.ca else []
        cmd = [self.binary, "ctl", "--admin", f"{self.scheme}://{self.admin_addr}", "--token", self.token, *ca, *args]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        if res.returncode != 0:
            raise RuntimeError(f"facet {' '.join(args)} failed ({res.returncode}): {res.stderr}")
        return res.stdout

    def create_tenant(self, name):
        out = json.loads(self.ctl("tenant", "create", name, "-o", "json"))
        assert out["tenant"] and out["access_key"] and out["secret_key"], out
        return out


@pytest.fixture(scope="session")
def facet_bin():
    b = Path(os.environ.get("FACET_BIN", REPO / "bin" / "facet")).resolve()
    if not b.is_file():
        pytest.fail(f"{b} does not exist: run `make build` (make test does) or set FACET_BIN")
    return str(b)


@pytest.fixture(scope="session")
def server(facet_bin, tmp_path_factory):
    d = tmp_path_factory.mktemp("facet")
    srv = Server(facet_bin, d / "data", d / "facet.log")
    srv.start()
    yield srv
    srv.stop()


class TLSProxy:
    """Terminates TLS on a loopback port and relays bytes to the server."""

    def __init__(self, target, certfile, keyfile):
        self.target = target
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(certfile, keyfile)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]
        self.closing = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while not self.closing.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, raw):
        try:
            raw.settimeout(120)
            tls = self.ctx.wrap_socket(raw, server_side=True)
            host, port = self.target.rsplit(":", 1)
            up = socket.create_connection((host, int(port)), timeout=120)
        except OSError:
            raw.close()
            return

        # One thread moves bytes both ways: an SSL socket must not be read
        # and written from two threads at once (that truncated responses).
        try:
            while True:
                readable, _, _ = select.select([tls, up], [], [], 120)
                if not readable:
                    break
                done = False
                for src in readable:
                    dst = up if src is tls else tls
                    b = src.recv(65536)
                    if not b:
                        done = True
                        break
                    dst.sendall(b)
                    # Decrypted bytes already inside the SSL object do not
                    # wake select: drain them now.
                    while src is tls and tls.pending():
                        more = tls.recv(65536)
                        if not more:
                            done = True
                            break
                        up.sendall(more)
                if done:
                    break
        except OSError:
            pass
        finally:
            for sock in (tls, up):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()

    def close(self):
        self.closing.set()
        self.sock.close()
        self.thread.join(timeout=5)


@pytest.fixture(scope="session")
def tls(server, tmp_path_factory):
    """(https endpoint, CA bundle path) of a TLS proxy in front of the server."""
    openssl = shutil.which("openssl")
    if not openssl:
        pytest.fail("openssl is needed to make the test certificate (apt-get install openssl)")
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True, timeout=60)
    proxy = TLSProxy(server.s3_addr, str(cert), str(key))
    yield f"https://127.0.0.1:{proxy.port}", str(cert)
    proxy.close()


def make_client(endpoint, creds, verify=None, **cfg):
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=creds["access_key"],
        aws_secret_access_key=creds["secret_key"],
        verify=verify,
        # s3v4 also for presigned URLs, which botocore would otherwise sign
        # with SigV2; Facet speaks SigV4 only.
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1, "mode": "standard"},
                      connect_timeout=10, read_timeout=120, **cfg),
    )


@pytest.fixture
def tenant(server):
    return server.create_tenant("py-" + uuid.uuid4().hex[:10])


@pytest.fixture
def other_tenant(server):
    return server.create_tenant("py-" + uuid.uuid4().hex[:10])


@pytest.fixture
def s3(server, tenant):
    """boto3 over plain HTTP (signed payloads, checksums in headers)."""
    return make_client(server.endpoint, tenant)


@pytest.fixture
def s3tls(tls, tenant):
    """boto3 over HTTPS: its defaults, STREAMING-UNSIGNED-PAYLOAD-TRAILER with CRC32."""
    endpoint, ca = tls
    return make_client(endpoint, tenant, verify=ca)


@pytest.fixture
def bucket(s3):
    name = "b-" + uuid.uuid4().hex[:16]
    s3.create_bucket(Bucket=name)
    return name


class AwsCli:
    """Runs this venv's aws cli with a tenant's keys and a private config."""

    def __init__(self, endpoint, creds, config_dir, ca_bundle=None):
        self.endpoint = endpoint
        self.exe = str(Path(sys.executable).parent / "aws")
        if not Path(self.exe).is_file():
            pytest.fail(f"{self.exe} missing: the venv must install awscli")
        cfg = Path(config_dir) / "aws-config"
        cfg.write_text(
            "[default]\n"
            f"region = {REGION}\n"
            "s3 =\n"
            "    multipart_chunksize = 5MB\n"
            "    multipart_threshold = 5MB\n"
            "    addressing_style = path\n"
            "    signature_version = s3v4\n")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        self.env.update({
            "AWS_ACCESS_KEY_ID": creds["access_key"],
            "AWS_SECRET_ACCESS_KEY": creds["secret_key"],
            "AWS_DEFAULT_REGION": REGION,
            "AWS_CONFIG_FILE": str(cfg),
            "AWS_SHARED_CREDENTIALS_FILE": str(Path(config_dir) / "no-credentials"),
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_MAX_ATTEMPTS": "1",
            "AWS_PAGER": "",
        })
        if ca_bundle:
            self.env["AWS_CA_BUNDLE"] = ca_bundle

    def run(self, *args, check=True, timeout=300):
        res = subprocess.run([self.exe, "--endpoint-url", self.endpoint, *args],
                             capture_output=True, text=True, env=self.env, timeout=timeout)
        if check and res.returncode != 0:
            raise AssertionError(f"aws {' '.join(args)} exited {res.returncode}\nstdout: {res.stdout}\nstderr: {res.stderr}")
        return res

    def json(self, *args):
        return json.loads(self.run(*args, "--output", "json").stdout or "null")


@pytest.fixture
def cli(server, tenant, tmp_path):
    return AwsCli(server.endpoint, tenant, tmp_path)


@pytest.fixture
def cli_tls(tls, tenant, tmp_path):
    endpoint, ca = tls
    return AwsCli(endpoint, tenant, tmp_path, ca_bundle=ca)


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call" and rep.failed and "server" in item.fixturenames:
        srv = item.funcargs.get("server")
        if srv is not None:
            rep.sections.append(("facet serve log (tail)", srv.log_tail(30)))
