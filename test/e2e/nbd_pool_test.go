package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestNBDDefaultPool: a fresh `facet serve` serves volumes out of the box,
// on the default pool in DATA/pool; once an administrator configures a
// pool, new volumes go there, the default pool stays while it holds a
// volume, and goes with its last one.
func TestNBDDefaultPool(t *testing.T) {
	data := t.TempDir()
	srv := startBlockServer(t, data, "e2e-admin-"+randHex(16))
	srv.createPlainTenant(t, "acme")
	type pool struct {
		Name     string   `json:"name"`
		Dir      string   `json:"dir"`
		Usage    string   `json:"usage"`
		Capacity int64    `json:"capacity"`
		Default  bool     `json:"default"`
		Volumes  []string `json:"volumes"`
	}
	pools := func() []pool {
		var pl struct {
			Pools []pool `json:"pools"`
		}
		if err := json.Unmarshal(srv.mustCtl(t, "pool", "list", "-o", "json"), &pl); err != nil {
			t.Fatal(err)
		}
		return pl.Pools
	}
	pl := pools()
	if len(pl) != 1 || pl[0].Name != "default" || !pl[0].Default || pl[0].Usage != "best-effort" ||
		pl[0].Dir != filepath.Join(data, "pool") || pl[0].Capacity <= 0 {
		t.Fatalf("a fresh server's pools: %+v", pl)
	}
	// The ctl default class is best-effort: no flag needed.
	srv.mustCtl(t, "volume", "create", "vm1", "--tenant", "acme", "--size", "64MiB")
	if v := srv.volume(t, "vm1"); len(v.Extents) != 1 || v.Extents[0].Pool != "default" {
		t.Fatalf("vm1: %+v", v)
	}
	run(t, "qemu-io", "-f", "raw", "-c", "write -P 0x3c 0 1M", "-c", "read -P 0x3c 0 1M", srv.uri("vm1"))
	if m, _ := filepath.Glob(filepath.Join(data, "pool", "vm1-*.img")); len(m) != 1 {
		t.Fatalf("vm1's file in DATA/pool: %v", m)
	}

	srv.mustCtl(t, "pool", "create", "ssd", "--dir", filepath.Join(data, "ssd"), "--capacity", "1GiB", "--usage", "random", "--iops", "1000")
	if pl := pools(); len(pl) != 2 || pl[0].Name != "default" || strings.Join(pl[0].Volumes, ",") != "vm1" {
		t.Fatalf("the default pool holding vm1 must stay: %+v", pl)
	}
	srv.mustCtl(t, "volume", "create", "vm2", "--tenant", "acme", "--size", "64MiB")
	if v := srv.volume(t, "vm2"); v.Extents[0].Pool != "ssd" {
		t.Fatalf("vm2 with a pool configured: %+v", v)
	}
	run(t, "qemu-io", "-f", "raw", "-c", "read -P 0x3c 0 1M", srv.uri("vm1"))
	srv.mustCtl(t, "volume", "delete", "vm1")
	if pl := pools(); len(pl) != 1 || pl[0].Name != "ssd" {
		t.Fatalf("the empty default pool must go once pools are configured: %+v", pl)
	}
}
