package cache

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/bus"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func open(t *testing.T, dir string, opts Options) *Store {
	t.Helper()
	opts.Dir = dir
	s, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ver(etag string, size int, mod time.Time) Version {
	return Version{ETag: etag, Size: int64(size), Modified: mod}
}

// fill admits body as bucket/key version v.
func fill(t *testing.T, s *Store, pol Policy, bucket, key string, v Version, body []byte) {
	t.Helper()
	f := s.Admit(pol, bucket, key, int64(len(body)))
	if f == nil {
		t.Fatalf("admit %s/%s refused", bucket, key)
	}
	for len(body) > 0 {
		n := min(len(body), 1000)
		f.Write(body[:n])
		body = body[n:]
	}
	if err := f.Commit(v); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, s *Store, bucket, key string, v Version, off, n int64) ([]byte, bool) {
	t.Helper()
	rc, ok := s.Open(bucket, key, v, off, n)
	if !ok {
		return nil, false
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b, true
}

func body(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed
	}
	return b
}

var lru = Policy{Size: 10 << 20, Evict: "lru"}

func TestHitServesExactVersionAndRanges(t *testing.T) {
	s := open(t, t.TempDir(), Options{})
	b := body(100_000, 1)
	v := ver("e1", len(b), t0)
	fill(t, s, lru, "b", "k", v, b)
	got, ok := read(t, s, "b", "k", v, 0, v.Size)
	if !ok || !bytes.Equal(got, b) {
		t.Fatalf("whole object: hit=%v equal=%v", ok, bytes.Equal(got, b))
	}
	for _, r := range [][2]int64{{0, 1}, {99_999, 1}, {4096, 50_000}, {5, 0}} {
		got, ok := read(t, s, "b", "k", v, r[0], r[1])
		if !ok || !bytes.Equal(got, b[r[0]:r[0]+r[1]]) {
			t.Fatalf("range %v: hit=%v", r, ok)
		}
	}
	if _, ok := read(t, s, "b", "k", v, 99_999, 2); ok {
		t.Fatal("a range past the end was served")
	}
	st := s.Stats()
	if st.Hits != 5 || st.BytesServed != uint64(100_000+1+1+50_000) || st.Entries != 1 || st.Bytes != 100_000 {
		t.Fatalf("stats %+v", st)
	}
}

// A different ETag or size is a miss, and the stale entry is dropped. A
// different last-modified alone is not: the bytes are the same.
func TestStaleVersionIsAMissAndDropped(t *testing.T) {
	s := open(t, t.TempDir(), Options{})
	fill(t, s, lru, "b", "k", ver("e1", 10, t0), body(10, 0))
	if _, ok := read(t, s, "b", "k", ver("e1", 10, t0.Add(time.Second)), 0, 10); !ok {
		t.Fatal("same ETag and size, other last-modified: missed")
	}
	for name, other := range map[string]Version{
		"etag": ver("e2", 10, t0),
		"size": ver("e1", 11, t0),
	} {
		t.Run(name, func(t *testing.T) {
			s := open(t, t.TempDir(), Options{})
			v := ver("e1", 10, t0)
			fill(t, s, lru, "b", "k", v, body(10, 0))
			if _, ok := read(t, s, "b", "k", other, 0, 1); ok {
				t.Fatal("served another version")
			}
			if _, ok := read(t, s, "b", "k", v, 0, 1); ok {
				t.Fatal("stale entry kept after a mismatch")
			}
			if st := s.Stats(); st.Stale != 1 || st.Entries != 0 || st.Bytes != 0 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func TestLRUEvictsLeastRecentlyUsed(t *testing.T) {
	s := open(t, t.TempDir(), Options{})
	pol := Policy{Size: 3 << 20, Evict: "lru"}
	vs := map[string]Version{}
	for _, k := range []string{"a", "b", "c"} {
		vs[k] = ver("e"+k, 1<<20, t0)
		fill(t, s, pol, "bk", k, vs[k], body(1<<20, k[0]))
	}
	read(t, s, "bk", "a", vs["a"], 0, 1) // a is now more recent than b
	vs["d"] = ver("ed", 1<<20, t0)
	fill(t, s, pol, "bk", "d", vs["d"], body(1<<20, 'd'))
	for k, want := range map[string]bool{"a": true, "b": false, "c": true, "d": true} {
		if got := s.Contains("bk", k, vs[k]); got != want {
			t.Errorf("%s cached=%v, want %v", k, got, want)
		}
	}
	if st := s.Stats(); st.Evictions != 1 || st.Bytes != 3<<20 {
		t.Fatalf("stats %+v", st)
	}
}

func TestLFUEvictsLeastFrequentlyUsed(t *testing.T) {
	s := open(t, t.TempDir(), Options{})
	pol := Policy{Size: 3 << 20, Evict: "lfu"}
	vs := map[string]Version{}
	for i, k := range []string{"a", "b", "c"} {
		vs[k] = ver("e"+k, 1<<20, t0)
		fill(t, s, pol, "bk", k, vs[k], body(1<<20, k[0]))
		for range 3 - i { // a: 3 hits, b: 2, c: 1
			read(t, s, "bk", k, vs[k], 0, 1)
		}
	}
	read(t, s, "bk", "c", vs["c"], 0, 1)
	read(t, s, "bk", "c", vs["c"], 0, 1) // c: 3 hits, b is now the least used
	vs["d"] = ver("ed", 1<<20, t0)
	fill(t, s, pol, "bk", "d", vs["d"], body(1<<20, 'd'))
	for k, want := range map[string]bool{"a": true, "b": false, "c": true, "d": true} {
		if got := s.Contains("bk", k, vs[k]); got != want {
			t.Errorf("%s cached=%v, want %v", k, got, want)
		}
	}
}

func TestTooLargeOrShortFillIsNotCached(t *testing.T) {
	s := open(t, t.TempDir(), Options{})
	if f := s.Admit(Policy{Size: 1 << 20, Evict: "lru"}, "b", "k", 2<<20); f != nil {
		t.Fatal("admitted an object larger than the policy's budget")
	}
	f := s.Admit(lru, "b", "k", 100)
	f.Write(body(60, 0))
	if err := f.Commit(ver("e", 100, t0)); err == nil {
		t.Fatal("committed a short fill")
	}
	f = s.Admit(lru, "b", "k", 10)
	f.Write(body(20, 0))
	if err := f.Commit(ver("e", 10, t0)); err == nil {
		t.Fatal("committed an overlong fill")
	}
	if st := s.Stats(); st.Entries != 0 || st.AdmitAborted != 2 {
		t.Fatalf("stats %+v", st)
	}
	if left, _ := os.ReadDir(filepath.Join(s.tmp)); len(left) != 0 {
		t.Fatalf("temporary files left: %d", len(left))
	}
}

// The index, its contents and the eviction order survive a restart;
// torn entries (a data file without its sidecar, a sidecar whose data
// file has the wrong size) are dropped.
func TestSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(context.Background(), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	pol := Policy{Size: 3 << 20, Evict: "lru"}
	vs := map[string]Version{}
	for _, k := range []string{"a", "b", "c"} {
		vs[k] = ver("e"+k, 1<<20, t0)
		fill(t, s, pol, "bk", k, vs[k], body(1<<20, k[0]))
	}
	read(t, s, "bk", "a", vs["a"], 0, 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A torn entry: truncate b's data file.
	var bID string
	ents, _ := os.ReadDir(filepath.Join(dir, "entries"))
	for _, e := range ents {
		if id, ok := cutSuffix(e.Name(), ".json"); ok {
			m, _ := os.ReadFile(filepath.Join(dir, "entries", e.Name()))
			if bytes.Contains(m, []byte(`"key":"b"`)) {
				bID = id
			}
		}
	}
	if err := os.Truncate(filepath.Join(dir, "entries", bID+".data"), 10); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "entries", "orphan.data"), []byte("x"), 0o600)

	s2 := open(t, dir, Options{})
	if !s2.Contains("bk", "c", vs["c"]) {
		t.Fatal("c lost across the restart")
	}
	if s2.Contains("bk", "b", vs["b"]) {
		t.Fatal("torn entry b served after restart")
	}
	if _, err := os.Stat(filepath.Join(dir, "entries", "orphan.data")); !os.IsNotExist(err) {
		t.Fatal("orphan data file kept")
	}
	// LRU order came back: a was used after c, so adding two entries
	// evicts c (b is gone already) and keeps a.
	for _, k := range []string{"d", "e"} {
		vs[k] = ver("e"+k, 1<<20, t0)
		fill(t, s2, pol, "bk", k, vs[k], body(1<<20, k[0]))
	}
	if got, ok := read(t, s2, "bk", "a", vs["a"], 0, 1<<20); !ok || !bytes.Equal(got, body(1<<20, 'a')) || s2.Contains("bk", "c", vs["c"]) {
		t.Fatalf("eviction order lost: a=%v c=%v", s2.Contains("bk", "a", vs["a"]), s2.Contains("bk", "c", vs["c"]))
	}
}

func cutSuffix(s, suf string) (string, bool) {
	if len(s) >= len(suf) && s[len(s)-len(suf):] == suf {
		return s[:len(s)-len(suf)], true
	}
	return s, false
}

type natsBus struct{ b *bus.NATS }

func (n natsBus) Publish(s string, d []byte) error { return n.b.Publish(s, d) }
func (n natsBus) Subscribe(p string, fn func(string, []byte)) (Subscription, error) {
	return n.b.Subscribe(p, fn)
}

// A change on one gateway drops the entry on the others, over a real
// (embedded) NATS bus, and never on the node that published it twice.
func TestInvalidationAcrossGateways(t *testing.T) {
	srv, err := bus.StartServer(bus.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var stores []*Store
	for i := range 2 {
		c, err := srv.Connect(fmt.Sprint("gw", i))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		stores = append(stores, open(t, t.TempDir(), Options{Node: fmt.Sprint("gw", i), Bus: natsBus{c}, Connected: c.Connected}))
	}
	a, b := stores[0], stores[1]
	v := ver("e1", 10, t0)
	fill(t, a, lru, "bk", "k", v, body(10, 0))
	fill(t, b, lru, "bk", "k", v, body(10, 0))
	b.Changed("bk", "k")
	if b.Contains("bk", "k", v) {
		t.Fatal("the changing gateway kept its entry")
	}
	deadline := time.Now().Add(10 * time.Second)
	for a.Contains("bk", "k", v) {
		if time.Now().After(deadline) {
			t.Fatal("the invalidation never reached the other gateway")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := b.Stats(); st.Published != 1 || !st.BusConnected {
		t.Fatalf("publisher stats %+v", st)
	}
}

func BenchmarkHit1MiB(b *testing.B) {
	s, err := Open(context.Background(), Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	data := body(1<<20, 0)
	v := ver("e", len(data), t0)
	f := s.Admit(lru, "b", "k", int64(len(data)))
	f.Write(data)
	if err := f.Commit(v); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		rc, ok := s.Open("b", "k", v, 0, v.Size)
		if !ok {
			b.Fatal("miss")
		}
		io.Copy(io.Discard, rc)
		rc.Close()
	}
}

// Entries are written without fsync: one whose bytes a crash changed
// (same size, other content) is dropped on its first hit after a restart.
func TestTornEntryDroppedOnFirstHit(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(context.Background(), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	v := ver("e", 5000, t0)
	fill(t, s, lru, "bk", "k", v, body(5000, 9))
	s.Close()
	ents, _ := os.ReadDir(filepath.Join(dir, "entries"))
	for _, e := range ents {
		if filepath.Ext(e.Name()) == ".data" {
			p := filepath.Join(dir, "entries", e.Name())
			b, _ := os.ReadFile(p)
			b[4000] ^= 0xff
			os.WriteFile(p, b, 0o600)
		}
	}
	s2 := open(t, dir, Options{})
	if !s2.Contains("bk", "k", v) {
		t.Fatal("entry not loaded")
	}
	if _, ok := read(t, s2, "bk", "k", v, 0, 10); ok {
		t.Fatal("a torn entry was served")
	}
	if s2.Contains("bk", "k", v) {
		t.Fatal("a torn entry was kept")
	}
	// A sound entry is verified once, then served.
	fill(t, s2, lru, "bk", "k", v, body(5000, 9))
	if got, ok := read(t, s2, "bk", "k", v, 10, 10); !ok || !bytes.Equal(got, body(5000, 9)[10:20]) {
		t.Fatal("a sound entry was not served")
	}
}

// A fill larger than what it holds in memory streams to the disk.
func TestLargeFillStreams(t *testing.T) {
	s := open(t, t.TempDir(), Options{})
	b := body(3<<20+123, 7)
	v := ver("big", len(b), t0)
	fill(t, s, Policy{Size: 8 << 20, Evict: "lru"}, "bk", "big", v, b)
	if got, ok := read(t, s, "bk", "big", v, 0, v.Size); !ok || !bytes.Equal(got, b) {
		t.Fatal("large fill lost")
	}
}

// Entries of caching parameters nobody uses any more are swept after they
// have been idle; a partition in use is left alone.
func TestIdlePartitionSwept(t *testing.T) {
	s := open(t, t.TempDir(), Options{})
	now := t0
	s.mu.Lock()
	s.now = func() time.Time { return now }
	s.mu.Unlock()
	old := Policy{Size: 4 << 20, Evict: "lru"}
	cur := Policy{Size: 8 << 20, Evict: "lfu"}
	for i := range 3 {
		fill(t, s, old, "bk", fmt.Sprint("old", i), ver(fmt.Sprint("o", i), 1000, t0), body(1000, byte(i)))
	}
	fill(t, s, cur, "bk", "cur", ver("c", 1000, t0), body(1000, 9))
	now = t0.Add(30 * time.Minute)
	read(t, s, "bk", "cur", ver("c", 1000, t0), 0, 1)
	now = t0.Add(61 * time.Minute)
	if n := s.sweepIdle(time.Hour, 2); n != 2 {
		t.Fatalf("swept %d, want the batch of 2", n)
	}
	if n := s.sweepIdle(time.Hour, 2); n != 1 {
		t.Fatalf("swept %d, want the last 1", n)
	}
	if !s.Contains("bk", "cur", ver("c", 1000, t0)) || s.Stats().Entries != 1 {
		t.Fatalf("the partition in use lost entries: %+v", s.Stats())
	}
}
