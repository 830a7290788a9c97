"""Dynamic policies end to end, as separate processes (issue 5).

`facet bus` runs on its own, and `facet serve --bus nats://...` joins it: the
gateway's collector publishes its workload metrics on that bus, its
aggregator merges them, and the automation controllers switch policies on
and off. A boto3 client makes the load.

- The sources' Fig. 22: `FOR TENANT t1 WHEN put_ops > 3 DO SET compression`
  stays pending while t1 writes 1 object/s, and switches compression on by
  itself once t1 writes 6/s. The test prints the trigger latency.
- A TRANSIENT policy switches off again after the load stops (hold-down of
  3 periods).

Whether an object was stored compressed comes from the tenant's usage
(admin API) before and after its PUT, so PUTs are sequential.
"""

import json
import math
import socket
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from conftest import Server, _free_port, make_client

PERIOD = 1.0  # --metrics-period, seconds
THRESHOLD = 3  # put_ops > 3 in the policies below
BODY_SIZE = 64 * 1024


def compressible(seed):
    """BODY_SIZE bytes of log lines: redundant, but not constant."""
    out, i = [], 0
    while sum(len(x) for x in out) < BODY_SIZE:
        out.append(f"2026-03-01T10:{i // 60 % 60:02d}:{i % 60:02d}Z host-{i % 7} GET /api/v1/items/{(i * 7919) % 100000} "
                   f"status=200 dur={(i * 37) % 1000 / 10:.1f}ms {seed}\n".encode())
        i += 1
    return b"".join(out)[:BODY_SIZE]


class Bus:
    """A standalone `facet bus` process."""

    def __init__(self, binary, addr, log_path):
        self.binary, self.addr, self.log_path = binary, addr, log_path
        self.proc = None

    def start(self):
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([self.binary, "bus", "--addr", self.addr],
                                     stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        host, port = self.addr.rsplit(":", 1)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("facet bus exited early:\n" + Path(self.log_path).read_text(errors="replace"))
            try:
                socket.create_connection((host, int(port)), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("facet bus does not accept connections")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class BusServer(Server):
    """`facet serve` joined to an external bus."""

    def __init__(self, binary, data_dir, log_path, bus_url):
        super().__init__(binary, data_dir, log_path)
        self.bus_url = bus_url

    def start(self):
        for _ in range(3):
            self.s3_addr = f"127.0.0.1:{_free_port()}"
            self.admin_addr = f"127.0.0.1:{_free_port()}"
            log = open(self.log_path, "ab")
            self.proc = subprocess.Popen(
                [self.binary, "serve", "--data", str(self.data_dir),
                 "--s3-addr", self.s3_addr, "--admin-addr", self.admin_addr,
                 "--admin-token", self.token,
                 "--bus", self.bus_url, "--metrics-period", f"{PERIOD:g}s"],
                stdout=log, stderr=log, stdin=subprocess.DEVNULL)
            log.close()
            if self._wait_healthy(30):
                return
            self.stop()
        raise RuntimeError("facet serve did not become healthy; log:\n" + self.log_tail())

    def admin(self, path):
        req = urllib.request.Request(f"http://{self.admin_addr}{path}",
                                     headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.load(r)


@pytest.fixture(scope="module")
def dyn(facet_bin, tmp_path_factory):
    """(bus, server): separate processes talking through the bus."""
    d = tmp_path_factory.mktemp("dynamic")
    bus = Bus(facet_bin, f"127.0.0.1:{_free_port()}", d / "bus.log")
    bus.start()
    srv = BusServer(facet_bin, d / "data", d / "facet.log", f"nats://{bus.addr}")
    try:
        srv.start()
        yield bus, srv
    finally:
        srv.stop()
        bus.stop()


def policy_add(srv, text):
    [p] = json.loads(srv.ctl("policy", "add", text, "-o", "json"))["policies"]
    return p


def policy(srv, pid):
    for p in json.loads(srv.ctl("policy", "list", "-o", "json"))["policies"]:
        if p["id"] == pid:
            return p
    raise AssertionError(f"policy {pid} not listed")


class Writer:
    """Sequential PUTs of compressible objects, each one's stored size
    measured from the tenant's usage before and after it."""

    def __init__(self, srv, creds):
        self.srv, self.tenant = srv, creds["tenant"]
        self.s3 = make_client(srv.endpoint, creds)
        self.bucket = "dyn-" + uuid.uuid4().hex[:12]
        self.s3.create_bucket(Bucket=self.bucket)
        self.puts = []  # dicts: key, start, end (wall clock), stored, size
        self.bodies = {}

    def stored_bytes(self):
        return self.srv.admin(f"/v1/tenants/{self.tenant}/usage")["stored_bytes"]

    def put(self):
        key = f"obj-{len(self.puts):04d}.log"
        body = compressible(key)
        before = self.stored_bytes()
        start = time.time()
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=body)
        end = time.time()
        rec = {"key": key, "start": start, "end": end, "size": len(body), "stored": self.stored_bytes() - before}
        assert 0 < rec["stored"] <= len(body), rec
        self.puts.append(rec)
        self.bodies[key] = body
        return rec

    def run(self, rate, seconds, until=None):
        """PUTs at rate per second (on a fixed schedule) for seconds, or
        until until(record) is true; returns the records."""
        t0, n, out = time.monotonic(), 0, []
        while time.monotonic() - t0 < seconds:
            rec = self.put()
            out.append(rec)
            if until and until(rec):
                break
            n += 1
            time.sleep(max(0.0, t0 + n / rate - time.monotonic()))
        return out

    def check(self, keys):
        for k in keys:
            got = self.s3.get_object(Bucket=self.bucket, Key=k)["Body"].read()
            assert got == self.bodies[k], f"{k}: GET returned other bytes ({len(got)} of {len(self.bodies[k])})"


def compressed(rec):
    return rec["stored"] < rec["size"] // 2


def first_busy_second(puts):
    """Start (Unix seconds) of the first wall-clock period in which the
    client finished more than THRESHOLD PUTs: when the load crossed."""
    per = {}
    for r in puts:
        s = math.floor(r["end"] / PERIOD) * PERIOD
        per[s] = per.get(s, 0) + 1
    busy = sorted(s for s, n in per.items() if n / PERIOD > THRESHOLD)
    return busy[0] if busy else None


def wait_state(srv, pid, want, timeout):
    deadline = time.monotonic() + timeout
    while True:
        p = policy(srv, pid)
        if p["state"] == want:
            return p
        if time.monotonic() > deadline:
            raise AssertionError(f"policy {pid} still {p['state']!r} after {timeout}s (want {want!r}): {p}")
        time.sleep(0.1)


def test_fig22_put_rate_switches_compression_on(dyn):
    """1 PUT/s: stored as written, policy pending. 6 PUT/s: compression on by itself."""
    _, srv = dyn
    t = "fig22-" + uuid.uuid4().hex[:6]
    w = Writer(srv, srv.create_tenant(t))
    p = policy_add(srv, f"FOR TENANT {t} WHEN put_ops > {THRESHOLD} DO SET compression")
    assert p["state"] == "pending", p

    slow = w.run(rate=1, seconds=5)
    for r in slow:
        assert r["stored"] == r["size"], f"at 1 PUT/s {r['key']} was stored in {r['stored']} of {r['size']} bytes"
    assert policy(srv, p["id"])["state"] == "pending", policy(srv, p["id"])

    # Raise to 6/s; stop a couple of seconds after the first compressed object.
    seen = []

    def enough(rec):
        if compressed(rec):
            seen.append(rec)
        return len(seen) >= 12

    fast = w.run(rate=6, seconds=30, until=enough)
    first = next((i for i, r in enumerate(fast) if compressed(r)), None)
    assert first is not None, f"no compressed object after {len(fast)} PUTs at 6/s: {[r['stored'] for r in fast]}; policy {policy(srv, p['id'])}"
    # PERSISTENT: once on, every later object is compressed.
    later = [r for r in fast[first:] if not compressed(r)]
    assert not later, f"objects stored uncompressed after compression switched on: {later}"

    pol = policy(srv, p["id"])
    assert pol["state"] == "active", pol
    assert "put_ops=" in pol["reason"] and f"> {THRESHOLD} on tenant:{t}" in pol["reason"], pol
    ctl = [c for c in srv.admin("/v1/controllers")["controllers"] if c.get("policy") == p["id"]]
    assert ctl and ctl[0]["active"] is True and ctl[0]["state"] == "running", ctl

    busy = first_busy_second(fast)
    assert busy is not None, "the client never made more than 3 PUTs in a second"
    # The crossing: the load went above the threshold when the client went to
    # 6/s, inside the first period that counted more than 3 PUTs.
    raised = fast[0]["start"]
    crossing = max(raised, busy)
    switched = fast[first]["start"]
    latency = switched - crossing
    print(f"\nfig22: trigger latency {latency:.2f} s (from the crossing at {crossing:.3f}, when the client went to "
          f"6 PUT/s, to the start of the first compressed PUT at {switched:.3f}); "
          f"{switched - (busy + PERIOD):.2f} s after the end of the first period above {THRESHOLD} PUT/s; "
          f"{first} uncompressed PUTs at 6/s before it; period {PERIOD:g} s, resolution one PUT ({1 / 6:.2f} s); "
          f"reason: {pol['reason']}")
    assert latency < 15, f"trigger latency {latency:.1f} s"
    w.check([slow[0]["key"], fast[0]["key"], fast[first]["key"], fast[-1]["key"]])


def test_transient_policy_reverts_after_hold_down(dyn):
    _, srv = dyn
    t = "trans-" + uuid.uuid4().hex[:6]
    w = Writer(srv, srv.create_tenant(t))
    p = policy_add(srv, f"FOR TENANT {t} WHEN put_ops > {THRESHOLD} DO SET compression TRANSIENT")
    assert p["state"] == "pending", p

    fast = w.run(rate=6, seconds=20, until=compressed)
    assert compressed(fast[-1]), f"never switched on at 6 PUT/s: {[r['stored'] for r in fast]}; policy {policy(srv, p['id'])}"
    assert policy(srv, p["id"])["state"] == "active"
    # Keep the load a little longer: it must stay on while busy.
    busy = w.run(rate=6, seconds=2)
    assert all(compressed(r) for r in busy), [r["stored"] for r in busy]

    stopped = time.time()
    pol = wait_state(srv, p["id"], "pending", timeout=20)
    reverted = time.time()
    print(f"\ntransient: load stopped at {stopped:.3f}, policy pending again after {reverted - stopped:.2f} s "
          f"(hold-down 3 periods of {PERIOD:g} s); reason: {pol['reason']}")
    assert "deactivated" in pol["reason"], pol
    # A quiet tenant's new objects are stored as written again.
    r = w.put()
    assert r["stored"] == r["size"], f"after the revert {r['key']} was stored in {r['stored']} of {r['size']} bytes"
    # The hold-down: three quiet periods cannot pass in less than two seconds.
    assert reverted - stopped > 2 * PERIOD - 0.5, f"reverted {reverted - stopped:.2f} s after the load stopped"
    w.check([fast[0]["key"], fast[-1]["key"], busy[-1]["key"], r["key"]])
