package trash

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/storage/fs"
)

// racing is the fs backend with a hook run just before Delete's delete
// (or, without conditional delete, before its check): where a PUT racing
// the DELETE lands at the worst moment.
type racing struct {
	*fs.Store
	before func()
}

func (r *racing) DeleteObjectIf(ctx context.Context, bucket, key, etag string, modified time.Time) error {
	r.before()
	return r.Store.DeleteObjectIf(ctx, bucket, key, etag, modified)
}

// plain hides DeleteObjectIf: a backend without conditional delete.
type plain struct{ r *racing }

func (p plain) HeadObject(ctx context.Context, bucket, key string) (storage.ObjectInfo, error) {
	p.r.before()
	return p.r.Store.HeadObject(ctx, bucket, key)
}

type plainBackend struct {
	storage.Backend
	plain
}

func (p plainBackend) HeadObject(ctx context.Context, bucket, key string) (storage.ObjectInfo, error) {
	return p.plain.HeadObject(ctx, bucket, key)
}

func binVersions(t *testing.T, s *Store, tenant string) []string {
	t.Helper()
	items, err := s.List(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, it := range items {
		out = append(out, it.ETag)
	}
	return out
}

// A PUT that lands between the bin's copy and its delete is what gets
// kept: the DELETE deletes exactly the version in the bin, with or
// without a backend that deletes conditionally.
func TestDeleteKeepsTheVersionItDeletes(t *testing.T) {
	for _, conditional := range []bool{true, false} {
		t.Run(fmt.Sprintf("conditional=%v", conditional), func(t *testing.T) {
			f := newFixture(t)
			r := &racing{Store: f.b.(*fs.Store)}
			var backend storage.Backend = r
			if !conditional {
				backend = plainBackend{Backend: r.Store, plain: plain{r}}
			}
			s := New(Config{Backend: backend, Owners: owners{"docs": "t1"}})
			f.put(t, "docs", "k", []byte("v1-first"), storage.ObjectMeta{})
			injected := false
			r.before = func() {
				if !injected {
					injected = true
					f.put(t, "docs", "k", []byte("v2-acknowledged"), storage.ObjectMeta{})
				}
			}
			if err := s.Delete(context.Background(), "t1", "docs", "k", time.Hour); err != nil {
				t.Fatal(err)
			}
			if _, err := f.b.HeadObject(context.Background(), "docs", "k"); !errors.Is(err, storage.ErrObjectNotFound) {
				t.Fatalf("object still there: %v", err)
			}
			if got := binVersions(t, s, "t1"); len(got) != 1 || got[0] != "etag-v2-a" {
				t.Fatalf("bin holds %v, want the version the DELETE deleted (etag-v2-a) alone", got)
			}
		})
	}
}

// An object that never stops changing is not deleted: the DELETE fails
// (ErrBusy) rather than delete a version it did not keep, and leaves no
// copies of versions no one deleted.
func TestDeleteGivesUpOnAnObjectThatKeepsChanging(t *testing.T) {
	f := newFixture(t)
	r := &racing{Store: f.b.(*fs.Store)}
	s := New(Config{Backend: r, Owners: owners{"docs": "t1"}})
	f.put(t, "docs", "k", []byte("v0"), storage.ObjectMeta{})
	n := 0
	r.before = func() {
		n++
		f.put(t, "docs", "k", fmt.Appendf(nil, "v%d", n), storage.ObjectMeta{})
	}
	if err := s.Delete(context.Background(), "t1", "docs", "k", time.Hour); !errors.Is(err, ErrBusy) {
		t.Fatalf("Delete: %v, want ErrBusy", err)
	}
	b, _ := f.get(t, "docs", "k")
	if string(b) != fmt.Sprintf("v%d", n) {
		t.Fatalf("object %q, want the last acknowledged version v%d", b, n)
	}
	if got := binVersions(t, s, "t1"); len(got) != 0 {
		t.Fatalf("bin holds copies of overwritten versions: %v", got)
	}
	if err := s.Delete(context.Background(), "t1", "docs", "missing", time.Hour); err != nil {
		t.Fatalf("a missing object: %v", err)
	}
}

// Real goroutines: a writer PUTs versions one after the other while
// DELETEs run. Every version a DELETE removed is in the bin; the
// version standing at the end is the last write or is in the bin.
func TestDeleteRacingPutsLosesNoAcknowledgedWrite(t *testing.T) {
	f := newFixture(t)
	s := New(Config{Backend: f.b, Owners: owners{"docs": "t1"}})
	ctx := context.Background()
	const versions = 150
	var deleted []string // versions the writer saw gone before its next PUT
	var stop atomic.Bool
	var wg sync.WaitGroup
	var delErrs atomic.Int64
	const deleters = 2
	for range deleters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if err := s.Delete(ctx, "t1", "docs", "k", time.Hour); err != nil {
					if !errors.Is(err, ErrBusy) {
						t.Error(err)
						return
					}
					delErrs.Add(1)
				}
			}
		}()
	}
	last := ""
	for i := range versions {
		body := fmt.Appendf(nil, "%04d-version", i)
		meta := storage.ObjectMeta{Size: int64(len(body)), ETag: string(body[:4])}
		if _, err := f.b.PutObject(ctx, "docs", "k", storage.PutInput{Body: bytes.NewReader(body), Meta: meta}); err != nil {
			t.Fatal(err)
		}
		last = meta.ETag
		if i%3 == 0 {
			time.Sleep(time.Millisecond) // let a DELETE through now and then
		}
		if _, err := f.b.HeadObject(ctx, "docs", "k"); errors.Is(err, storage.ErrObjectNotFound) {
			deleted = append(deleted, last)
		}
	}
	stop.Store(true)
	wg.Wait()
	inBin := map[string]int{}
	for _, v := range binVersions(t, s, "t1") {
		inBin[v]++
	}
	// Two DELETEs that both copied a version before one of them deleted
	// it both keep it (each was acknowledged; neither can tell that the
	// other kept it), so a version may be there once per DELETE.
	for v, n := range inBin {
		if n > deleters {
			t.Errorf("version %s is in the bin %d times", v, n)
		}
	}
	for _, v := range deleted {
		if inBin[v] == 0 {
			t.Errorf("version %s was deleted but is not in the bin", v)
		}
	}
	info, err := f.b.HeadObject(ctx, "docs", "k")
	switch {
	case err == nil && info.Meta.ETag != last:
		t.Errorf("the object is %s, not the last write %s", info.Meta.ETag, last)
	case errors.Is(err, storage.ErrObjectNotFound) && inBin[last] == 0:
		t.Errorf("the last write %s was deleted and is not in the bin", last)
	case err != nil && !errors.Is(err, storage.ErrObjectNotFound):
		t.Fatal(err)
	}
	if len(deleted) == 0 {
		t.Log("no DELETE landed between two PUTs this run")
	}
	t.Logf("%d versions, %d seen deleted, %d in the bin, %d DELETEs gave up", versions, len(deleted), len(inBin), delErrs.Load())
}
