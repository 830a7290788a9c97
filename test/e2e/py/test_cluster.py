"""A Facet fleet end to end with boto3 (issue 9).

redis-server (the shared metadata store), `facet bus`, versitygw as the
shared S3 object store, one `facet controller` and two stateless
`facet gateway`s, every one its own process on 127.0.0.1. A compression
policy is set through gateway 1's admin API; boto3 writes through gateway
2 (one small object and one multipart upload whose compressed parts are
far below S3's 5 MiB minimum); the backend, read directly, holds fewer
bytes than were written; both gateways read back the exact bytes.
"""

import base64
import contextlib
import json
import os
import secrets
import shutil
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

import boto3
import pytest
from boto3.s3.transfer import TransferConfig
from botocore.config import Config

from conftest import REPO, REGION, Server, _free_port, make_client
from test_dynamic import Bus, compressible


def _versitygw():
    if os.environ.get("FACET_SKIP_VERSITYGW") == "1":
        pytest.skip("FACET_SKIP_VERSITYGW=1")
    res = subprocess.run([str(REPO / "bench" / "peers" / "versitygw.sh"), "install"], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.fail("installing versitygw failed (set FACET_SKIP_VERSITYGW=1 to skip):\n" + res.stderr)
    cache = os.environ.get("FACET_PEERS_CACHE") or str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "facet-bench-peers")
    return str(Path(cache) / "bin" / "versitygw")


def _wait(check, what, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {timeout} s")
        time.sleep(0.05)


class Proc:
    """A background process with its log in a file."""

    def __init__(self, argv, log_path, env=None):
        log = open(log_path, "ab")
        self.log_path = log_path
        self.proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=env)
        log.close()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Gateway(Server):
    """`facet gateway`: the fleet's stores come from env."""

    def __init__(self, binary, log_path, env, token):
        super().__init__(binary, None, log_path)
        self.env, self.token = env, token

    def start(self):
        for _ in range(3):
            self.s3_addr = f"127.0.0.1:{_free_port()}"
            self.admin_addr = f"127.0.0.1:{_free_port()}"
            self.p = Proc([self.binary, "gateway", "--s3-addr", self.s3_addr, "--admin-addr", self.admin_addr],
                          self.log_path, self.env)
            self.proc = self.p.proc
            if self._wait_healthy(30):
                return
            self.stop()
        raise RuntimeError("facet gateway did not become healthy; log:\n" + self.log_tail())

    def metric(self, name):
        req = urllib.request.Request(f"http://{self.admin_addr}/metrics", headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[1])
        raise AssertionError(f"{name} not in /metrics")


@contextlib.contextmanager
def start_fleet(facet_bin, d, gateways=2, extra_env=None, gateway_env=None, gateway_class=None):
    """Runs a fleet in directory d: redis-server, `facet bus`, versitygw with
    bucket "facet", one `facet controller` and `gateways` `facet gateway`s
    (gateway_class(binary, log_path, env, token), default Gateway; the i-th
    one's environment gets gateway_env(i) when given). Yields (gateways,
    backend boto3 client as root, env). Other fleet tests reuse it."""
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server not found (scripts/ensure-deps.sh installs it)")
    gateway_class = gateway_class or Gateway
    procs = []
    try:
        redis_port = _free_port()
        procs.append(Proc(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--dir", str(d),
                           "--save", "", "--appendonly", "no"], d / "redis.log"))
        bus = Bus(facet_bin, f"127.0.0.1:{_free_port()}", d / "bus.log")
        bus.start()
        procs.append(bus)
        vgw_addr = f"127.0.0.1:{_free_port()}"
        access, secret = "fleetroot", "s" + secrets.token_hex(12)
        (d / "vgw").mkdir()
        procs.append(Proc([_versitygw(), "--port", vgw_addr, "--health", "/health", "posix", str(d / "vgw")], d / "vgw.log",
                          dict(os.environ, ROOT_ACCESS_KEY_ID=access, ROOT_SECRET_ACCESS_KEY=secret)))
        _wait(lambda: urllib.request.urlopen(f"http://{vgw_addr}/health", timeout=1).status == 200, "versitygw up")
        backend = boto3.client("s3", endpoint_url=f"http://{vgw_addr}", region_name=REGION, aws_access_key_id=access,
                               aws_secret_access_key=secret, config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
        backend.create_bucket(Bucket="facet")
        token = "fleet-" + secrets.token_hex(16)
        env = dict(os.environ,
                   FACET_META=f"redis://127.0.0.1:{redis_port}/0", FACET_BUS=f"nats://{bus.addr}",
                   FACET_BACKEND=f"s3://{access}:{secret}@{vgw_addr}/facet/fleet?tls=false",
                   FACET_MASTER_KEY=base64.b64encode(secrets.token_bytes(32)).decode(), FACET_ADMIN_TOKEN=token,
                   **(extra_env or {}))
        procs.append(Proc([facet_bin, "controller", "--data", str(d / "ctl")], d / "controller.log", env))
        gws = []
        for i in range(gateways):
            genv = dict(env, **(gateway_env(i) if gateway_env else {}))
            g = gateway_class(facet_bin, d / f"gateway{i + 1}.log", genv, token)
            g.start()
            gws.append(g)
            procs.append(g)
        yield gws, backend, env
    finally:
        for p in reversed(procs):
            p.stop()


@pytest.fixture(scope="module")
def fleet(facet_bin, tmp_path_factory):
    with start_fleet(facet_bin, tmp_path_factory.mktemp("fleet")) as (gws, backend, _):
        yield gws[0], gws[1], backend


def test_policy_on_gateway1_compresses_writes_through_gateway2(fleet):
    gw1, gw2, backend = fleet
    tenant = "py" + uuid.uuid4().hex[:6]
    creds = gw1.create_tenant(tenant)
    s3a, s3b = make_client(gw1.endpoint, creds), make_client(gw2.endpoint, creds)
    bucket = "fleet-" + uuid.uuid4().hex[:8]
    s3b.create_bucket(Bucket=bucket)

    before = gw2.metric("facet_policy_table_version")
    gw1.ctl("policy", "add", f"FOR TENANT {tenant} DO SET compression", "-o", "json")
    after = gw1.metric("facet_policy_table_version")
    assert after > before
    _wait(lambda: gw2.metric("facet_policy_table_version") >= after, "gateway 2 loads the policy set on gateway 1")

    small = compressible("small") * 4
    s3b.put_object(Bucket=bucket, Key="small.log", Body=small)
    # 3 parts of 8 MiB of log text: each compresses far below 5 MiB.
    big = b"".join(compressible(f"part{i}") for i in range(3 * 8 * 1024 * 1024 // len(compressible("x")) + 1))[:24 << 20]
    tc = TransferConfig(multipart_threshold=8 << 20, multipart_chunksize=8 << 20, max_concurrency=2)
    s3b.upload_fileobj(__import__("io").BytesIO(big), bucket, "big.log", Config=tc)
    head = s3b.head_object(Bucket=bucket, Key="big.log")
    assert head["ETag"].strip('"').endswith("-3"), head["ETag"]

    for key, body in (("small.log", small), ("big.log", big)):
        stored = backend.head_object(Bucket="facet", Key=f"fleet/{bucket}/{key}")["ContentLength"]
        assert stored < len(body) // 2, f"{key}: the backend holds {stored} bytes of {len(body)}: not compressed"
        for s3 in (s3a, s3b):
            assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == body
    rng = s3a.get_object(Bucket=bucket, Key="big.log", Range="bytes=9000000-9000099")["Body"].read()
    assert rng == big[9000000:9000100]
