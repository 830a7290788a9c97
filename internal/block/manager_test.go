package block

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/block/nbd"
	"github.com/facet-sds/facet/internal/keys"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/metrics"
)

func testManager(t *testing.T, cfg Config) (*Manager, *meta.Store) {
	t.Helper()
	mk := make([]byte, meta.MasterKeySize)
	rand.Read(mk)
	store, err := meta.OpenURL(t.Context(), "", t.TempDir(), mk, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cfg.Store = store
	m := New(cfg)
	ctx := t.Context()
	for _, tn := range []string{"acme", "bob"} {
		if _, err := store.CreateTenant(ctx, tn); err != nil {
			t.Fatal(err)
		}
	}
	// acme's volumes take plain loopback peers (the tests open them as
	// the local administrator); bob's do not.
	if _, err := store.SetTenantPlainNBD(ctx, "acme", true); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreatePool(ctx, meta.Pool{Name: "p", Dir: t.TempDir(), Capacity: 1 << 30, Usage: ClassBestEffort}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateVolume(ctx, meta.Volume{Name: "av", Tenant: "acme", Size: 1 << 20, Class: ClassBestEffort}); err != nil {
		t.Fatal(err)
	}
	return m, store
}

func TestExportsOwnerOnly(t *testing.T) {
	m, _ := testManager(t, Config{})
	ctx := t.Context()
	owner := nbd.Peer{TLS: true, Identity: "acme"}
	other := nbd.Peer{TLS: true, Identity: "bob"}
	local := nbd.Peer{Loopback: true}
	if l, _ := m.List(ctx, other); len(l) != 0 {
		t.Fatalf("bob lists %v", l)
	}
	if l, _ := m.List(ctx, owner); len(l) != 1 {
		t.Fatalf("acme lists %v", l)
	}
	if _, _, err := m.Open(ctx, "av", other); !errors.Is(err, nbd.ErrUnknown) {
		t.Fatalf("bob opens acme's volume: %v", err)
	}
	d, info, err := m.Open(ctx, "av", owner)
	if err != nil || info.Size != 1<<20 || !info.MultiConn {
		t.Fatalf("owner open: %v %+v", err, info)
	}
	d2, _, err := m.Open(ctx, "av", local)
	if err != nil {
		t.Fatalf("plain peer, tenant allows plain NBD: %v", err)
	}
	// bob does not allow plain NBD: a plain peer gets "TLS required" for
	// bob's volume and for a name that does not exist alike.
	if _, err := m.CreateVolume(ctx, meta.Volume{Name: "bv", Tenant: "bob", Size: 1 << 20, Class: ClassBestEffort}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"bv", "nosuch"} {
		if _, _, err := m.Open(ctx, name, local); !errors.Is(err, nbd.ErrTLSRequired) {
			t.Fatalf("plain open of %s: %v, want ErrTLSRequired", name, err)
		}
		if _, err := m.Lookup(ctx, name, local); !errors.Is(err, nbd.ErrTLSRequired) {
			t.Fatalf("plain lookup of %s: %v, want ErrTLSRequired", name, err)
		}
	}
	if l, _ := m.List(ctx, local); len(l) != 1 || l[0].Name != "av" {
		t.Fatalf("plain peer lists %v, want av only", l)
	}
	if _, err := m.Lookup(ctx, "bv", nbd.Peer{TLS: true, Identity: "bob"}); err != nil {
		t.Fatalf("bob over TLS: %v", err)
	}
	if err := m.DeleteVolume(ctx, "bv"); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteVolume(ctx, "av"); !errors.Is(err, ErrVolumeBusy) {
		t.Fatalf("delete while open: %v", err)
	}
	d.Close()
	d2.Close()
	if err := m.DeleteVolume(ctx, "av"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ClientCert(ctx, "acme"); !errors.Is(err, ErrNoTLS) {
		t.Fatalf("client cert without TLS: %v", err)
	}
}

func TestVolumeMetricsPublished(t *testing.T) {
	got := map[string]metrics.NodeSample{}
	m, _ := testManager(t, Config{Node: "n1", Publish: func(subject string, data []byte) error {
		var s metrics.NodeSample
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		got[subject] = s
		return nil
	}})
	m.publish(time.Unix(100, 5e8), map[string]Rates{"av": {ReadBW: 3e6, WriteIOPS: 7000}, "idle": {}})
	rb := got[metrics.SubjectNodePrefix+"volume_read_bw"]
	if rb.Values["volume:av"] != 3e6 || rb.Node != "n1" || rb.StartMs != 99000 || rb.PeriodMs != 1000 {
		t.Fatalf("read_bw sample %+v", rb)
	}
	if got[metrics.SubjectNodePrefix+"volume_write_iops"].Values["volume:av"] != 7000 {
		t.Fatalf("write_iops sample %+v", got)
	}
	// Every metric goes out every period, empty or not: the aggregator
	// waits for every live node's sample before it merges a period.
	if wb, ok := got[metrics.SubjectNodePrefix+"volume_write_bw"]; !ok || len(wb.Values) != 0 {
		t.Fatalf("write_bw with no activity: %+v, %v", wb, ok)
	}
	if _, ok := rb.Values["volume:idle"]; ok {
		t.Fatal("an idle volume has a value")
	}
}

// TestVolumeKeysPerVolume: the encryption filter's key is derived from
// the master key for each volume: two volumes holding the same data store
// different bytes, a volume reopened reads its data back, and a manager
// with another master key cannot.
func TestVolumeKeysPerVolume(t *testing.T) {
	master := make([]byte, keys.MasterKeySize)
	rand.Read(master)
	kp, err := keys.New(master, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	pols := &tablePolicies{}
	pols.set(t, "FOR ALL VOLUMES DO SET encryption")
	m, store := testManager(t, Config{Policies: pols, Keys: kp})
	ctx := t.Context()
	if _, err := m.CreateVolume(ctx, meta.Volume{Name: "bv", Tenant: "acme", Size: 1 << 20, Class: ClassBestEffort}); err != nil {
		t.Fatal(err)
	}
	plain := bytes.Repeat([]byte{0x5a}, 8192)
	stored := map[string][]byte{}
	for _, name := range []string{"av", "bv"} {
		d, _, err := m.Open(ctx, name, nbd.Peer{Loopback: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.WriteAt(ctx, bytes.Clone(plain), 4096, true); err != nil {
			t.Fatal(err)
		}
		d.Close()
		rec, _ := store.GetVolume(ctx, name)
		f, err := os.ReadFile(memberPath(m.pools["p"].Dir, rec, 0))
		if err != nil {
			t.Fatal(err)
		}
		stored[name] = f[4096 : 4096+8192]
		if bytes.Equal(stored[name], plain) {
			t.Fatalf("%s stored in clear", name)
		}
	}
	if bytes.Equal(stored["av"], stored["bv"]) {
		t.Fatal("two volumes share a key")
	}
	read := func(m *Manager) []byte {
		t.Helper()
		d, _, err := m.Open(ctx, "av", nbd.Peer{Loopback: true})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		got := make([]byte, len(plain))
		if err := d.ReadAt(ctx, got, 4096); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if !bytes.Equal(read(m), plain) {
		t.Fatal("av reopened does not read its data back")
	}
	rand.Read(master)
	other, err := keys.New(master, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	m2 := New(Config{Store: store, Policies: pols, Keys: other})
	if err := m2.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(read(m2), plain) {
		t.Fatal("another master key decrypts av")
	}
}

// TestDefaultPool follows the default pool through its life: made on the
// first reload when no pool exists, taking volumes while alone, kept (and
// closed to new volumes) once an administrator's pool exists while it
// holds one, removed when its last volume goes, and back when the
// administrator's pools are gone.
func TestDefaultPool(t *testing.T) {
	mk := make([]byte, meta.MasterKeySize)
	rand.Read(mk)
	ctx := t.Context()
	store, err := meta.OpenURL(ctx, "", t.TempDir(), mk, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if _, err := store.CreateTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SetTenantPlainNBD(ctx, "acme", true); err != nil { // opened plain below
		t.Fatal(err)
	}
	dir := t.TempDir() + "/pool"
	m := New(Config{Store: store, DefaultPoolDir: dir})
	if err := m.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	pools := func() []PoolUsage {
		t.Helper()
		pl, err := m.ListPools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}
	pl := pools()
	if len(pl) != 1 || pl[0].Name != DefaultPoolName || !pl[0].Default || pl[0].Dir != dir || pl[0].Usage != ClassBestEffort || pl[0].Capacity <= 0 {
		t.Fatalf("pools after the first reload: %+v", pl)
	}
	v1, err := m.CreateVolume(ctx, meta.Volume{Name: "v1", Tenant: "acme", Size: 1 << 20, Class: ClassBestEffort})
	if err != nil || v1.Extents[0].Pool != DefaultPoolName {
		t.Fatalf("volume on the default pool: %+v %v", v1, err)
	}
	d, _, err := m.Open(ctx, "v1", nbd.Peer{Loopback: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.WriteAt(ctx, []byte("hello"), 0, true); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if _, err := os.Stat(memberPath(dir, v1, 0)); err != nil {
		t.Fatalf("backing file not under the default pool's directory: %v", err)
	}

	// An administrator's pool: the default stays for v1, new volumes go
	// to the new pool.
	if _, err := m.CreatePool(ctx, meta.Pool{Name: "ssd", Dir: t.TempDir(), Capacity: 1 << 30, RandIOPS: 1000, Usage: ClassRandom}); err != nil {
		t.Fatal(err)
	}
	if pl := pools(); len(pl) != 2 {
		t.Fatalf("the default pool holding v1 must stay: %+v", pl)
	}
	v2, err := m.CreateVolume(ctx, meta.Volume{Name: "v2", Tenant: "acme", Size: 1 << 20, Class: ClassBestEffort})
	if err != nil || v2.Extents[0].Pool != "ssd" {
		t.Fatalf("new volume with pools configured: %+v %v", v2, err)
	}
	if _, err := m.ResizeVolume(ctx, "v1", 2<<20); err != nil {
		t.Fatalf("a volume on the default pool still grows there: %v", err)
	}
	if err := m.DeleteVolume(ctx, "v1"); err != nil {
		t.Fatal(err)
	}
	if pl := pools(); len(pl) != 1 || pl[0].Name != "ssd" {
		t.Fatalf("empty default pool with pools configured must go: %+v", pl)
	}

	// The administrator's pools gone, the default is back.
	if err := m.DeleteVolume(ctx, "v2"); err != nil {
		t.Fatal(err)
	}
	if err := m.DeletePool(ctx, "ssd"); err != nil {
		t.Fatal(err)
	}
	if pl := pools(); len(pl) != 1 || !pl[0].Default {
		t.Fatalf("no pool configured: want the default back, got %+v", pl)
	}
	// An administrator cannot make a pool the default.
	p, err := m.CreatePool(ctx, meta.Pool{Name: "x", Dir: t.TempDir(), Capacity: 1 << 30, Usage: ClassBestEffort, Default: true})
	if err != nil || p.Default {
		t.Fatalf("administrator's pool: %+v %v", p, err)
	}
}

func TestFreeSpaceRounded(t *testing.T) {
	n, err := freeSpace(t.TempDir() + "/pool")
	if err != nil || n <= 0 {
		t.Fatalf("free space: %d %v", n, err)
	}
	if n%(1<<20) != 0 || (n >= 1<<30 && n%(1<<30) != 0) {
		t.Errorf("free space %d is not rounded down to whole GiB (or MiB)", n)
	}
}
