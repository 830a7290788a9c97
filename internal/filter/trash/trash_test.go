package trash

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/storage/fs"
)

type owners map[string]string

func (o owners) BucketOwner(_ context.Context, bucket string) (string, time.Time, error) {
	t, ok := o[bucket]
	if !ok {
		return "", time.Time{}, errors.New("no such bucket")
	}
	return t, time.Time{}, nil
}

// bg counts what the bin paid in the background class.
type bg struct {
	mu          sync.Mutex
	ops         map[string]int
	bytes, open int64
}

func (b *bg) Admit(_ context.Context, tenant string) (Work, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ops[tenant]++
	b.open++
	return work{b}, nil
}

type work struct{ b *bg }

func (w work) WaitBytes(_ context.Context, n int64) error {
	w.b.mu.Lock()
	w.b.bytes += n
	w.b.mu.Unlock()
	return nil
}
func (w work) Done() { w.b.mu.Lock(); w.b.open--; w.b.mu.Unlock() }

type fixture struct {
	s       *Store
	b       storage.Backend
	now     time.Time
	changed []string
	bg      *bg
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	b, err := fs.Open(context.Background(), t.TempDir(), fs.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	for _, bk := range []string{"docs", "other"} {
		if err := b.CreateBucket(context.Background(), bk); err != nil {
			t.Fatal(err)
		}
	}
	f := &fixture{b: b, now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), bg: &bg{ops: map[string]int{}}}
	f.s = New(Config{Backend: b, Owners: owners{"docs": "t1", "other": "t2"}, Background: f.bg,
		Changed: func(bucket, key string) { f.changed = append(f.changed, bucket+"/"+key) },
		Now:     func() time.Time { return f.now }})
	return f
}

func (f *fixture) put(t *testing.T, bucket, key string, body []byte, meta storage.ObjectMeta) storage.ObjectInfo {
	t.Helper()
	meta.Size, meta.ETag = int64(len(body)), "etag-"+string(body[:min(4, len(body))])
	info, err := f.b.PutObject(context.Background(), bucket, key, storage.PutInput{Body: bytes.NewReader(body), Meta: meta})
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func (f *fixture) get(t *testing.T, bucket, key string) ([]byte, storage.ObjectInfo) {
	t.Helper()
	rc, info, err := f.b.GetObject(context.Background(), bucket, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return b, info
}

func TestKeepListRestore(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	body := bytes.Repeat([]byte("report "), 1000)
	f.put(t, "docs", "q1/report.txt", body, storage.ObjectMeta{ContentType: "text/plain", UserMeta: map[string]string{"a": "1"},
		System: map[string]string{"facet.plan": `{"v":1,"r":[]}`}})
	if err := f.s.Keep(ctx, "t1", "docs", "q1/report.txt", 30*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := f.b.DeleteObject(ctx, "docs", "q1/report.txt"); err != nil {
		t.Fatal(err)
	}
	if err := f.s.Keep(ctx, "t1", "docs", "missing", time.Hour); !errors.Is(err, storage.ErrObjectNotFound) {
		t.Fatalf("keeping a missing object: %v", err)
	}
	items, err := f.s.List(ctx, "t1")
	if err != nil || len(items) != 1 {
		t.Fatalf("list: %v %v", items, err)
	}
	it := items[0]
	if it.Bucket != "docs" || it.Key != "q1/report.txt" || it.Size != int64(len(body)) || it.ETag != "etag-repo" ||
		!it.DeletedAt.Equal(f.now) || !it.ExpiresAt.Equal(f.now.Add(30*24*time.Hour)) {
		t.Fatalf("item %+v", it)
	}
	if other, _ := f.s.List(ctx, "t2"); len(other) != 0 {
		t.Fatalf("t2 sees t1's bin: %v", other)
	}
	if _, err := f.s.Restore(ctx, "t2", it.ID, false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("t2 restored t1's item: %v", err)
	}
	if _, err := f.s.Restore(ctx, "t1", it.ID, false); err != nil {
		t.Fatal(err)
	}
	got, info := f.get(t, "docs", "q1/report.txt")
	if !bytes.Equal(got, body) || info.Meta.ETag != "etag-repo" || info.Meta.ContentType != "text/plain" ||
		info.Meta.UserMeta["a"] != "1" || info.Meta.System["facet.plan"] == "" || len(info.Meta.System) != 1 {
		t.Fatalf("restored object differs: %+v", info.Meta)
	}
	if len(f.changed) != 1 || f.changed[0] != "docs/q1/report.txt" {
		t.Fatalf("changes reported: %v", f.changed)
	}
	if items, _ := f.s.List(ctx, "t1"); len(items) != 0 {
		t.Fatalf("restored item still in the bin: %v", items)
	}
	if f.bg.ops["t1"] != 3 || f.bg.bytes != 2*int64(len(body)) || f.bg.open != 0 {
		t.Fatalf("background class: %+v", f.bg)
	}
}

func TestRestoreConflictAndOverwrite(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.put(t, "docs", "k", []byte("old!"), storage.ObjectMeta{})
	f.s.Keep(ctx, "t1", "docs", "k", time.Hour)
	f.put(t, "docs", "k", []byte("new!"), storage.ObjectMeta{})
	items, _ := f.s.List(ctx, "t1")
	if _, err := f.s.Restore(ctx, "t1", items[0].ID, false); !errors.Is(err, ErrConflict) {
		t.Fatalf("restore over an object: %v", err)
	}
	if got, _ := f.get(t, "docs", "k"); string(got) != "new!" {
		t.Fatal("a refused restore changed the object")
	}
	f.now = f.now.Add(time.Minute)
	if _, err := f.s.Restore(ctx, "t1", items[0].ID, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.get(t, "docs", "k"); string(got) != "old!" {
		t.Fatal("overwrite did not restore")
	}
	items, _ = f.s.List(ctx, "t1")
	if len(items) != 1 || items[0].ETag != "etag-new!" {
		t.Fatalf("the overwritten object is not in the bin: %+v", items)
	}
}

func TestRestoreRefusesABucketNowOwnedByAnother(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.put(t, "other", "k", []byte("data"), storage.ObjectMeta{})
	f.s.Keep(ctx, "t1", "other", "k", time.Hour) // t1 owned "other" when it deleted k
	f.b.DeleteObject(ctx, "other", "k")
	items, _ := f.s.List(ctx, "t1")
	if _, err := f.s.Restore(ctx, "t1", items[0].ID, true); !errors.Is(err, ErrBucketGone) {
		t.Fatalf("restore into t2's bucket: %v", err)
	}
}

func TestPurge(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	for _, k := range []string{"a", "b", "c"} {
		f.put(t, "docs", k, []byte(k), storage.ObjectMeta{})
	}
	f.s.Keep(ctx, "t1", "docs", "a", time.Hour)
	f.s.Keep(ctx, "t1", "docs", "b", 3*time.Hour)
	f.s.Keep(ctx, "t1", "docs", "c", 3*time.Hour)
	if n, err := f.s.PurgeExpired(ctx); err != nil || n != 0 {
		t.Fatalf("purged %d before expiry: %v", n, err)
	}
	f.now = f.now.Add(2 * time.Hour)
	before := f.bg.ops["t1"]
	if n, err := f.s.PurgeExpired(ctx); err != nil || n != 1 {
		t.Fatalf("purged %d, want 1: %v", n, err)
	}
	// The purge is the tenant's background work: one admitted operation
	// per object purged, ended.
	if f.bg.ops["t1"] != before+1 || f.bg.open != 0 {
		t.Fatalf("background class after the purge: %d ops (was %d), %d open", f.bg.ops["t1"], before, f.bg.open)
	}
	items, _ := f.s.List(ctx, "t1")
	if len(items) != 2 {
		t.Fatalf("left %v", items)
	}
	if err := f.s.Purge(ctx, "t1", items[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := f.s.Purge(ctx, "t1", items[0].ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("purging twice: %v", err)
	}
	for _, bad := range []string{"", "../x", "1-2-zz", "1-2-0123456g"} {
		if err := f.s.Purge(ctx, "t1", bad); !errors.Is(err, ErrNotFound) {
			t.Fatalf("id %q: %v", bad, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("t1/1767225600-1767225600000000000-0a1b2c3d/docs/a/b.txt")
	f.Add("t1//docs/k")
	f.Add("t1/99999999999999999999-1-00000000/b/k")
	f.Fuzz(func(t *testing.T, name string) {
		it, ok := parse(name, storage.ObjectInfo{})
		if !ok {
			return
		}
		if it.Tenant == "" || it.Bucket == "" || !idRE.MatchString(it.ID) || it.Tenant+"/"+it.ID+"/"+it.Bucket+"/"+it.Key != name {
			t.Fatalf("parse(%q) = %+v", name, it)
		}
	})
}
