package fleet

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/bus"
	"github.com/facet-sds/facet/internal/control"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/filter/builtin"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/meta/redistest"
	"github.com/facet-sds/facet/internal/s3err"
)

func masterKeyForTest(t *testing.T) []byte {
	mk := make([]byte, meta.MasterKeySize)
	if _, err := rand.Read(mk); err != nil {
		t.Fatal(err)
	}
	return mk
}

// fleetNode is one node of a test fleet: its own store connection, policy
// service, cache and sync, on a shared bus.
type fleetNode struct {
	store    *meta.Store
	policies *control.Service
	cache    *meta.Cache
	sync     *Sync
	admin    AdminStore
}

func startFleetNode(t *testing.T, name string, store *meta.Store, b bus.Bus, poll time.Duration, log *slog.Logger) *fleetNode {
	t.Helper()
	health := NewHealth(log)
	ann := NewAnnouncer(name, store, b, health, log)
	n := &fleetNode{store: store, cache: meta.NewCache(meta.CacheConfig{Store: store, TTL: time.Hour, Health: health, Notify: ann.PublishInvalidation})}
	n.policies = control.New(control.Config{Store: PolicyStore{Store: store, Announcer: ann}, Registry: builtin.NewRegistry(), Logger: log})
	n.sync = NewSync(SyncConfig{Announcer: ann, Policies: n.policies, Cache: n.cache, Poll: poll, Logger: log})
	if err := n.policies.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	if err := n.sync.Subscribe(); err != nil {
		t.Fatal(err)
	}
	go func() { n.sync.Run(ctx); close(done) }()
	n.admin = AdminStore{Store: store, Reload: n.policies.Reload, Sync: n.sync, Log: log}
	return n
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

// Two gateways over one Redis and one bus, with the safety-net poll turned
// off: a policy added through one reaches the other by the bus push alone,
// and so do a key revocation and a bucket deletion.
func TestFleetPushReachesOtherNodes(t *testing.T) {
	rds := redistest.Start(t)
	mk := masterKeyForTest(t)
	log := slog.New(slog.DiscardHandler)
	srv, err := bus.StartServer(bus.ServerOptions{Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	var nodes []*fleetNode
	for i := range 2 {
		st, err := meta.OpenURL(t.Context(), rds.URL(0, ""), "", mk, log)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		conn, err := srv.Connect(fmt.Sprint("n", i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		nodes = append(nodes, startFleetNode(t, fmt.Sprint("n", i), st, conn, time.Hour, log))
	}
	a, b := nodes[0], nodes[1]
	ctx := t.Context()
	_, key, err := a.admin.CreateTenantWithKey(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "node b loads the version of the tenant creation", func() bool { return b.policies.Version() == a.policies.Version() })

	before := b.policies.Version()
	if _, res, err := a.policies.Apply(ctx, "FOR TENANT acme DO SET compression"); err != nil || !res.Valid {
		t.Fatalf("apply: %v %+v", err, res)
	}
	after := a.policies.Version()
	if after <= before {
		t.Fatalf("node a's version %d did not move past %d", after, before)
	}
	waitUntil(t, "node b runs the policy node a added, with no poll", func() bool { return b.policies.Version() == after })
	if p := b.policies.ForPut(&filter.Request{Tenant: "acme", Bucket: "x", Key: "k"}); len(p.Steps) != 1 {
		t.Fatalf("node b's pipeline for acme has %d steps; want compression", len(p.Steps))
	}

	// Credentials and buckets cached on b, changed through a.
	if _, _, err := b.cache.LookupAccessKey(ctx, key.AccessKey); err != nil {
		t.Fatal(err)
	}
	if err := a.cache.ClaimBucket(ctx, "acme", "logs"); err != nil {
		t.Fatal(err)
	}
	if owner, _, err := b.cache.BucketOwner(ctx, "logs"); err != nil || owner != "acme" {
		t.Fatalf("bucket owner on b: %q %v", owner, err)
	}
	if err := a.admin.RevokeKey(ctx, "acme", key.AccessKey); err != nil {
		t.Fatal(err)
	}
	// Same node: gone before RevokeKey returned.
	if _, _, err := a.cache.LookupAccessKey(ctx, key.AccessKey); !errors.Is(err, s3err.ErrUnknownAccessKey) {
		t.Fatalf("node a still accepts the key it revoked: %v", err)
	}
	waitUntil(t, "node b refuses the key revoked on node a", func() bool {
		_, _, err := b.cache.LookupAccessKey(ctx, key.AccessKey)
		return errors.Is(err, s3err.ErrUnknownAccessKey)
	})
	if err := a.cache.ReleaseBucket(ctx, "acme", "logs"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.cache.BucketOwner(ctx, "logs"); !errors.Is(err, s3err.ErrNoSuchBucket) {
		t.Fatalf("node a still knows the bucket it deleted: %v", err)
	}
	waitUntil(t, "node b forgets the bucket deleted on node a", func() bool {
		_, _, err := b.cache.BucketOwner(ctx, "logs")
		return errors.Is(err, s3err.ErrNoSuchBucket)
	})
}

// flakyStore is a cache store whose reads can be made to fail as an
// unreachable store would.
type flakyStore struct {
	meta.CacheStore
	mu    sync.Mutex
	down  bool
	reads int
}

var errStoreDown = errors.New("dial tcp 127.0.0.1:6379: connection refused")

func (f *flakyStore) setDown(d bool) { f.mu.Lock(); f.down = d; f.mu.Unlock() }

func (f *flakyStore) fail() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.down {
		return errStoreDown
	}
	return nil
}

func (f *flakyStore) LookupAccessKey(ctx context.Context, ak string) (string, string, error) {
	if err := f.fail(); err != nil {
		return "", "", err
	}
	return f.CacheStore.LookupAccessKey(ctx, ak)
}

func (f *flakyStore) BucketOwner(ctx context.Context, b string) (string, time.Time, error) {
	if err := f.fail(); err != nil {
		return "", time.Time{}, err
	}
	return f.CacheStore.BucketOwner(ctx, b)
}

func (f *flakyStore) PolicyVersion(context.Context) (uint64, error) {
	if err := f.fail(); err != nil {
		return 0, err
	}
	return 0, nil
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// A single node (one `facet serve`) whose store goes away: records past
// their TTL are served from memory, unknown ones fail, the outage is
// logged once, and the store is obeyed again when it returns.
func TestMetaCacheFailStatic(t *testing.T) {
	mk := masterKeyForTest(t)
	logs := &syncBuf{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	st, err := meta.Open(t.Context(), filepath.Join(t.TempDir(), meta.DefaultBoltFile), mk, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	ctx := t.Context()
	_, key, err := st.CreateTenantWithKey(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ClaimBucket(ctx, "acme", "logs"); err != nil {
		t.Fatal(err)
	}
	flaky := &flakyStore{CacheStore: st}
	health := NewHealth(log)
	now := time.Now()
	cache := meta.NewCache(meta.CacheConfig{Store: flaky, TTL: time.Minute, Health: health, Now: func() time.Time { return now }})
	srv, err := bus.StartServer(bus.ServerOptions{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	conn, err := srv.Connect("n")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ann := NewAnnouncer("n", flaky, conn, health, log)
	fs := NewSync(SyncConfig{Announcer: ann, Policies: fixedVersion(0), Cache: cache, Logger: log})

	if _, _, err := cache.LookupAccessKey(ctx, key.AccessKey); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cache.BucketOwner(ctx, "logs"); err != nil {
		t.Fatal(err)
	}
	reads := flaky.reads
	// Fresh records cost no read.
	for range 10 {
		_, _, _ = cache.LookupAccessKey(ctx, key.AccessKey)
		_, _, _ = cache.BucketOwner(ctx, "logs")
	}
	if flaky.reads != reads {
		t.Fatalf("fresh records were read %d times from the store", flaky.reads-reads)
	}

	flaky.setDown(true)
	now = now.Add(2 * time.Minute) // past the TTL
	for range 5 {
		fs.check(ctx)
		if tn, _, err := cache.LookupAccessKey(ctx, key.AccessKey); err != nil || tn != "acme" {
			t.Fatalf("store down: cached key refused: %q %v", tn, err)
		}
		if owner, _, err := cache.BucketOwner(ctx, "logs"); err != nil || owner != "acme" {
			t.Fatalf("store down: cached bucket refused: %q %v", owner, err)
		}
	}
	if _, _, err := cache.BucketOwner(ctx, "never-seen"); err == nil {
		t.Fatal("store down: an uncached bucket was answered")
	}
	if !fs.Health().StoreDown() {
		t.Fatal("the sync does not report the store down")
	}
	if n := strings.Count(logs.String(), "metadata store unreachable"); n != 1 {
		t.Fatalf("the outage was logged %d times; want once:\n%s", n, logs.String())
	}
	if cache.Stats().Stale == 0 {
		t.Fatal("no stale answer was counted")
	}

	flaky.setDown(false)
	fs.check(ctx)
	if fs.Health().StoreDown() || !strings.Contains(logs.String(), "metadata store reachable again") {
		t.Fatalf("store back: down=%v; log:\n%s", fs.Health().StoreDown(), logs.String())
	}
	// The store is obeyed again: a revocation made while this node was not
	// told (no invalidation) takes effect once the record is re-read.
	if err := st.RevokeKey(ctx, "acme", key.AccessKey); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cache.LookupAccessKey(ctx, key.AccessKey); !errors.Is(err, s3err.ErrUnknownAccessKey) {
		t.Fatalf("a key revoked in the store is still accepted after its TTL: %v", err)
	}
}

type fixedVersion uint64

func (v fixedVersion) Version() uint64                  { return uint64(v) }
func (v fixedVersion) Reload(ctx context.Context) error { return nil }

// The bus messages are decoded strictly.
func TestDecodeFleetMsg(t *testing.T) {
	var v PolicyVersionMsg
	if err := decodeMsg([]byte(`{"v":1,"version":7,"node":"a"}`), &v); err != nil || v.Version != 7 {
		t.Fatalf("%+v %v", v, err)
	}
	for _, bad := range []string{`{"v":2,"version":7}`, `{"v":1,"version":7,"x":1}`, `{"v":1}{}`, `[]`, ``} {
		var m PolicyVersionMsg
		if err := decodeMsg([]byte(bad), &m); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

func FuzzDecodeFleetMsg(f *testing.F) {
	f.Add([]byte(`{"v":1,"version":7,"node":"a"}`))
	f.Add([]byte(`{"v":1,"node":"a","keys":["FK1"],"tenants":["t"],"buckets":["b"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v PolicyVersionMsg
		if decodeMsg(data, &v) == nil && v.V != msgVersion {
			t.Fatalf("accepted version %d", v.V)
		}
		var m InvalidateMsg
		if decodeMsg(data, &m) == nil {
			c := meta.NewCache(meta.CacheConfig{Store: forgetOnly{}, TTL: time.Minute})
			c.Invalidate(m.Invalidation) // must not panic
		}
	})
}

type forgetOnly struct{ meta.CacheStore }

func (forgetOnly) ForgetAccessKeys(...string) {}
