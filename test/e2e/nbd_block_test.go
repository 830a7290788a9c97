package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNBDBlockStandalone: `facet block` runs the block stage without the
// S3 gateway: pools and volumes through `facet ctl pool|volume`, the
// policy language for a volume's filters, and NBD clients on its port.
func TestNBDBlockStandalone(t *testing.T) {
	data := t.TempDir()
	token := "e2e-admin-" + randHex(16)
	var srv *blockServer
	for attempt := 0; attempt < 3 && srv == nil; attempt++ {
		s := &server{t: t, dataDir: data, adminAddr: freeAddr(t), token: token, done: make(chan struct{})}
		nbdAddr := freeAddr(t)
		err := s.launch([]string{"block", "--data", data, "--admin-addr", s.adminAddr, "--admin-token", token, "--nbd-addr", nbdAddr,
			"--nbd-allow-plain-loopback", // plain clients below: the test is about the block stage alone
			"--audit-log", filepath.Join(t.TempDir(), "audit.log")}, nil)
		if err == nil {
			srv = &blockServer{server: s, nbdAddr: nbdAddr}
		} else if !strings.Contains(err.Error(), "address already in use") {
			t.Fatalf("starting facet block: %v", err)
		}
	}
	if srv == nil {
		t.Fatal("facet block: no free port after 3 attempts")
	}
	srv.createPlainTenant(t, "acme")
	srv.createPlainTenant(t, "bob")
	pool := filepath.Join(data, "pool-a")
	srv.mustCtl(t, "pool", "create", "a", "--dir", pool, "--capacity", "1GiB", "--usage", "random", "--iops", "10000")
	srv.mustCtl(t, "pool", "create", "b", "--dir", filepath.Join(data, "pool-b"), "--capacity", "1GiB", "--usage", "random", "--iops", "10000")
	srv.mustCtl(t, "volume", "create", "v1", "--tenant", "acme", "--size", "64MiB", "--class", "random", "--iops", "4000")
	// 12000 IOPS fit on neither pool alone: striped, 6000 on each (a has
	// 6000 left next to v1).
	srv.mustCtl(t, "volume", "create", "v2", "--tenant", "bob", "--size", "32MiB", "--class", "random", "--iops", "12000")
	srv.mustCtl(t, "policy", "add", "FOR VOLUME v1 DO SET xor WITH key=0x55, SET bitrev")

	type listed struct {
		Volumes []struct {
			Name    string `json:"name"`
			Tenant  string `json:"tenant"`
			Size    int64  `json:"size"`
			Extents []struct {
				Pool string `json:"pool"`
			} `json:"extents"`
			Filters []struct {
				Filter string `json:"filter"`
			} `json:"filters"`
		} `json:"volumes"`
	}
	list := func(args ...string) listed {
		var l listed
		if err := json.Unmarshal(srv.mustCtl(t, append([]string{"volume", "list", "-o", "json"}, args...)...), &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	// The policy reaches the block stage at its next poll.
	deadline := time.Now().Add(20 * time.Second)
	for l := list("acme"); len(l.Volumes) != 1 || len(l.Volumes[0].Filters) != 2; l = list("acme") {
		if time.Now().After(deadline) {
			t.Fatalf("volume list acme: %+v", l)
		}
		time.Sleep(100 * time.Millisecond)
	}
	l := list()
	if len(l.Volumes) != 2 || l.Volumes[0].Name != "v1" || l.Volumes[1].Name != "v2" || l.Volumes[1].Tenant != "bob" {
		t.Fatalf("volume list: %+v", l)
	}
	if f := l.Volumes[0].Filters; f[0].Filter != "xor" || f[1].Filter != "bitrev" {
		t.Errorf("v1 filters %+v", f)
	}
	if e := l.Volumes[1].Extents; len(e) != 2 {
		t.Errorf("v2 placement %+v, want a stripe over a and b", e)
	}
	if text := string(srv.mustCtl(t, "volume", "list")); !strings.Contains(text, "stripe(") || !strings.Contains(text, "xor,bitrev") {
		t.Errorf("volume list (table):\n%s", text)
	}

	// NBD on facet block's own port: written through xor then bitrev.
	run(t, "qemu-io", "-f", "raw", "-c", "write -P 0x01 1M 64k", "-c", "flush", "-c", "read -P 0x01 1M 64k", srv.uri("v1"))
	run(t, "qemu-io", "-f", "raw", "-c", "write -P 0x33 900k 2M", "-c", "read -P 0x33 900k 2M", srv.uri("v2"))
	if b := readAtFile(t, backingFile(t, pool, srv.volume(t, "v1")), 1<<20, 64<<10); !allBytes(b, 0x2a) { // bitrev(0x01^0x55)
		t.Errorf("v1's backing file holds %#x..., want 0x2a", b[:4])
	}
	if out := run(t, "nbdinfo", "--list", "nbd://"+srv.nbdAddr); !strings.Contains(out, "v1") || !strings.Contains(out, "v2") {
		t.Errorf("nbdinfo --list:\n%s", out)
	}
	// Per-volume metrics on facet block's own /metrics.
	_, _, body := httpGetAuth(t, "http://"+srv.adminAddr+"/metrics", token)
	if want := `facet_volume_write_bytes_total{tenant="bob",volume="v2"} 2.097152e+06`; !strings.Contains(string(body), want) {
		t.Errorf("/metrics lacks %s", want)
	}

	var pl struct {
		Pools []struct {
			Name         string   `json:"name"`
			ReservedIOPS int64    `json:"reserved_iops"`
			Volumes      []string `json:"volumes"`
		} `json:"pools"`
	}
	if err := json.Unmarshal(srv.mustCtl(t, "pool", "list", "-o", "json"), &pl); err != nil {
		t.Fatal(err)
	}
	if len(pl.Pools) != 2 || pl.Pools[0].ReservedIOPS+pl.Pools[1].ReservedIOPS != 16000 {
		t.Errorf("pool list: %+v", pl.Pools)
	}
	srv.mustCtl(t, "volume", "resize", "v1", "96MiB")
	if out := run(t, "nbdinfo", srv.uri("v1")); !strings.Contains(out, "100663296") {
		t.Errorf("resized v1:\n%s", out)
	}
	run(t, "qemu-io", "-f", "raw", "-c", "read -P 0x01 1M 64k", "-c", "read -P 0 90M 1M", srv.uri("v1"))
	srv.mustCtl(t, "volume", "delete", "v2")
	if l := list(); len(l.Volumes) != 1 || l.Volumes[0].Name != "v1" {
		t.Errorf("volume list after delete: %+v", l)
	}
	if _, err := srv.ctl(t, "pool", "delete", "a"); err == nil {
		t.Error("pool a holding v1 was deleted")
	}
	srv.mustCtl(t, "pool", "delete", "b")
	// The block admin API's actions are audited too.
	tail := string(srv.mustCtl(t, "audit", "tail", "-n", "100"))
	for _, op := range []string{`"op":"createPool"`, `"op":"createVolume"`, `"op":"resizeVolume"`, `"op":"deleteVolume"`, `"op":"deletePool"`} {
		if !strings.Contains(tail, op) {
			t.Errorf("facet block's audit log lacks %s:\n%s", op, tail)
		}
	}
}
