package ctl

import (
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/block"
	"github.com/facet-sds/facet/internal/meta"
)

// TestVolumeShowStripe: the table of `volume show` gives each stripe
// member's pool and share, as -o json does with extents; `pool list`
// marks the default pool.
func TestVolumeShowStripe(t *testing.T) {
	dir := t.TempDir()
	e := newEnvWith(t, func(st *meta.Store, cfg *admin.Config) {
		m := block.New(block.Config{Store: st, DefaultPoolDir: dir + "/default"})
		if err := m.Reload(t.Context()); err != nil {
			t.Fatal(err)
		}
		cfg.Volumes = m
	})
	mustOK(t, e.ctl(t, "tenant", "create", "acme"))
	out := mustOK(t, e.ctl(t, "pool", "list"))
	if !strings.Contains(out, "best-effort (default pool)") {
		t.Fatalf("pool list without the default pool:\n%s", out)
	}
	for _, p := range []string{"a", "b"} {
		mustOK(t, e.ctl(t, "pool", "create", p, "--dir", dir+"/"+p, "--capacity", "1GiB", "--usage", "sequential", "--seq-bw", "100MB/s"))
	}
	mustOK(t, e.ctl(t, "volume", "create", "wide", "--tenant", "acme", "--size", "100MiB", "--class", "sequential", "--seq-bw", "150MB/s"))
	out = mustOK(t, e.ctl(t, "volume", "show", "wide"))
	t.Log(out)
	for _, want := range []string{"stripe(a,b)", "MEMBERS (striped over 2 pools, 1MiB at a time each)",
		"0  a     50MiB     75.0MB/s  0", "1  b     50MiB     75.0MB/s  0"} {
		if !strings.Contains(out, want) {
			t.Errorf("volume show lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(mustOK(t, e.ctl(t, "pool", "list")), "default") {
		t.Error("the empty default pool is still listed with pools configured")
	}
	if out := mustOK(t, e.ctl(t, "volume", "show", "wide", "-o", "json")); strings.Contains(out, "MEMBERS") {
		t.Errorf("-o json is JSON only: %s", out)
	}
}
