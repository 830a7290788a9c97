package quota_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/quota"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/storage/fs"
)

// owners maps buckets to tenants.
type owners map[string]string

func (o owners) BucketOwner(_ context.Context, bucket string) (string, time.Time, error) {
	if t, ok := o[bucket]; ok {
		return t, time.Time{}, nil
	}
	return "", time.Time{}, s3err.ErrNoSuchBucket
}

type fixture struct {
	q     *quota.Backend
	store *meta.Store
	be    *fs.Store
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	ctx := t.Context()
	mk := make([]byte, meta.MasterKeySize)
	if _, err := rand.Read(mk); err != nil {
		t.Fatal(err)
	}
	store, err := meta.Open(ctx, filepath.Join(t.TempDir(), meta.DefaultBoltFile), mk, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	be, err := fs.Open(ctx, t.TempDir(), fs.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = be.Close() })
	q := quota.New(quota.Config{Backend: be, Ledger: store, Owners: owners{"b1": "acme"}, MaxUploads: 2})
	if err := q.CreateBucket(ctx, "b1"); err != nil {
		t.Fatal(err)
	}
	return fixture{q: q, store: store, be: be}
}

func (f fixture) usage(t *testing.T, bucket string) meta.Counters {
	t.Helper()
	_, u, err := f.store.Quota(t.Context(), meta.Scope{Tenant: "acme", Bucket: bucket})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func (f fixture) put(t *testing.T, key string, n int) error {
	t.Helper()
	_, err := f.q.PutObject(t.Context(), "b1", key, storage.PutInput{Body: bytes.NewReader(make([]byte, n)), Declared: int64(n),
		Meta: storage.ObjectMeta{Size: int64(n)}})
	return err
}

// Every change of what a tenant stores moves its counters, and a recount
// finds what they say.
func TestAccounting(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	if err := f.put(t, "a", 100); err != nil {
		t.Fatal(err)
	}
	if err := f.put(t, "a", 40); err != nil { // an overwrite
		t.Fatal(err)
	}
	if err := f.put(t, "b", 10); err != nil {
		t.Fatal(err)
	}
	if u := f.usage(t, ""); u != (meta.Counters{Bytes: 50, Physical: 50, Objects: 2, Buckets: 1}) {
		t.Fatalf("after puts: %+v", u)
	}
	up, err := f.q.CreateUpload(ctx, "b1", "mp", storage.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{7, 9} { // part 1 twice: the second replaces the first
		in := storage.PutInput{Body: bytes.NewReader(make([]byte, n)), Declared: int64(n), Seal: func(m *storage.ObjectMeta) error { m.Size = int64(n); return nil }}
		if _, err := f.q.PutPart(ctx, "b1", "mp", up.UploadID, 1, in); err != nil {
			t.Fatal(err)
		}
	}
	if u := f.usage(t, "b1"); u.Bytes != 59 || u.Uploads != 1 {
		t.Fatalf("with an open upload: %+v", u)
	}
	recounted, err := f.q.Recount(ctx, "acme", []string{"b1"})
	if err != nil || recounted != f.usage(t, "") {
		t.Fatalf("recount %+v, counters %+v (%v)", recounted, f.usage(t, ""), err)
	}
	if err := f.q.AbortUpload(ctx, "b1", "mp", up.UploadID); err != nil {
		t.Fatal(err)
	}
	if err := f.q.DeleteObject(ctx, "b1", "a"); err != nil {
		t.Fatal(err)
	}
	if err := f.q.DeleteObject(ctx, "b1", "never"); err != nil {
		t.Fatal(err)
	}
	if u := f.usage(t, ""); u != (meta.Counters{Bytes: 10, Physical: 10, Objects: 1, Buckets: 1}) {
		t.Fatalf("after abort and delete: %+v", u)
	}
}

// A refused write stores nothing and leaves the counters as they were; a
// failed one gives its reservation back.
func TestRefusal(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	if err := f.store.SetQuota(ctx, meta.Scope{Tenant: "acme"}, meta.Counters{Bytes: 100}); err != nil {
		t.Fatal(err)
	}
	if err := f.put(t, "a", 90); err != nil {
		t.Fatal(err)
	}
	err := f.put(t, "b", 20)
	var se *s3err.Error
	if !errors.As(err, &se) || se.Code != s3err.QuotaExceeded {
		t.Fatalf("over the quota: %v", err)
	}
	if _, err := f.be.HeadObject(ctx, "b1", "b"); !errors.Is(err, storage.ErrObjectNotFound) {
		t.Fatalf("the refused object was stored: %v", err)
	}
	_, err = f.q.PutObject(ctx, "b1", "c", storage.PutInput{Body: bytes.NewReader(make([]byte, 5)), Declared: 5,
		Seal: func(*storage.ObjectMeta) error { return errors.New("vetoed") }})
	if err == nil {
		t.Fatal("a vetoed write succeeded")
	}
	if u := f.usage(t, ""); u.Bytes != 90 || u.Objects != 1 {
		t.Fatalf("after a refusal and a failure: %+v", u)
	}
	// The default cap on open uploads (2 here) applies without a quota.
	for i := range 2 {
		if _, err := f.q.CreateUpload(ctx, "b1", "k"+string(rune('0'+i)), storage.ObjectMeta{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.q.CreateUpload(ctx, "b1", "k9", storage.ObjectMeta{}); !errors.As(err, &se) || se.Code != s3err.QuotaExceeded {
		t.Fatalf("third upload: %v", err)
	}
}

// In a bucket that keeps versions every version counts: an Enabled write
// replaces nothing, a delete writes a marker that frees nothing, and
// deleting a version by its id frees it.
func TestVersionsCount(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	v, ok := f.q.WithVersions().(storage.Versions)
	if !ok {
		t.Fatal("the version API is not forwarded")
	}
	if err := v.SetVersioning(ctx, "b1", storage.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{10, 20} {
		if err := f.put(t, "a", n); err != nil {
			t.Fatal(err)
		}
	}
	// A metadata-only copy onto itself makes a third version.
	if _, err := f.q.UpdateMeta(ctx, "b1", "a", storage.ObjectMeta{Size: 20, UserMeta: map[string]string{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	if u := f.usage(t, ""); u.Bytes != 50 || u.Objects != 3 {
		t.Fatalf("three versions: %+v", u)
	}
	if recounted, err := f.q.Recount(ctx, "acme", []string{"b1"}); err != nil || recounted != f.usage(t, "") {
		t.Fatalf("recount %+v, counters %+v (%v)", recounted, f.usage(t, ""), err)
	}
	if err := f.q.DeleteObject(ctx, "b1", "a"); err != nil {
		t.Fatal(err)
	}
	if u := f.usage(t, ""); u.Bytes != 50 || u.Objects != 3 {
		t.Fatalf("three versions and a marker: %+v", u)
	}
	page, err := v.ListObjectVersions(ctx, "b1", storage.ListVersionsOptions{MaxKeys: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range page.Versions {
		if !o.DeleteMarker && o.Meta.Size == 10 {
			if _, err := f.q.WithVersions().(storage.Versions).DeleteVersion(ctx, "b1", "a", o.VersionID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if u := f.usage(t, ""); u.Bytes != 40 || u.Objects != 2 {
		t.Fatalf("after deleting the first version: %+v", u)
	}
	if recounted, err := f.q.Recount(ctx, "acme", []string{"b1"}); err != nil || recounted != f.usage(t, "") {
		t.Fatalf("recount %+v, counters %+v (%v)", recounted, f.usage(t, ""), err)
	}
}
