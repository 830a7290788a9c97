package control

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/filter/builtin"
	"github.com/facet-sds/facet/internal/filter/wasm"
	"github.com/facet-sds/facet/internal/meta"
)

// emptyCommand is the smallest WASI command: (module (func (export
// "_start"))). It reads nothing and writes nothing; registration is what
// these tests are about (internal/filter/wasm runs real modules).
var emptyCommand = []byte("\x00asm\x01\x00\x00\x00" +
	"\x01\x04\x01\x60\x00\x00" + // type: () -> ()
	"\x03\x02\x01\x00" + // func 0 of type 0
	"\x07\x0a\x01\x06_start\x00\x00" + // export "_start"
	"\x0a\x04\x01\x02\x00\x0b") // body: end

type filterFixture struct {
	store *meta.Store
	svc   *Service
	adm   *FilterAdmin
}

func newFilterFixture(t *testing.T) *filterFixture {
	t.Helper()
	ctx := context.Background()
	store, err := meta.Open(ctx, t.TempDir()+"/meta.db", bytes.Repeat([]byte{7}, 32), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	for _, tn := range []string{"acme", "other"} {
		if _, _, err := store.CreateTenantWithKey(ctx, tn); err != nil {
			t.Fatal(err)
		}
	}
	rt, err := wasm.NewRuntime(ctx, wasm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(ctx) })
	cat, err := wasm.NewCatalog(wasm.CatalogConfig{Runtime: rt, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.Close(ctx) })
	svc := New(Config{Store: store, Registry: builtin.NewRegistry(), Dynamic: cat})
	if err := svc.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	return &filterFixture{store: store, svc: svc, adm: NewFilterAdmin(svc, store, cat)}
}

func (f *filterFixture) create(t *testing.T, desc string) admin.FilterInfo {
	t.Helper()
	in, err := f.adm.CreateFilter(context.Background(), []byte(desc), emptyCommand)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func wantErr(t *testing.T, err, sentinel error, text string) {
	t.Helper()
	if !errors.Is(err, sentinel) || !strings.Contains(err.Error(), text) {
		t.Fatalf("error %v, want %v containing %q", err, sentinel, text)
	}
}

func TestFilterRegistrationLifecycle(t *testing.T) {
	ctx := context.Background()
	f := newFilterFixture(t)
	in := f.create(t, `{"name":"mask","owner":"acme","methods":["PUT"],"stages":["gateway"],"params":[{"name":"level","type":"int","default":"1"}]}`)
	if in.Kind != "wasm" || in.Version != 1 || in.Owner != "acme" {
		t.Fatalf("created %+v", in)
	}
	// In the registry at once, for policies and listings.
	if got, ok := f.svc.Lookup("mask"); !ok || got.Owner != "acme" {
		t.Fatalf("lookup: %+v %v", got, ok)
	}
	fs, _ := f.svc.Filters(ctx)
	if !containsFilter(fs, "mask") {
		t.Fatal("not listed")
	}

	_, err := f.adm.CreateFilter(ctx, []byte(`{"name":"mask","methods":["PUT"],"stages":["gateway"]}`), emptyCommand)
	wantErr(t, err, admin.ErrConflict, "already exists")
	_, err = f.adm.CreateFilter(ctx, []byte(`{"name":"noop","methods":["PUT"],"stages":["gateway"]}`), emptyCommand)
	wantErr(t, err, admin.ErrConflict, "native filter")
	_, err = f.adm.CreateFilter(ctx, []byte(`{"name":"bad","methods":["PUT"],"stages":["gateway"]}`), []byte("not wasm"))
	wantErr(t, err, admin.ErrInvalidInput, "compiling")
	_, err = f.adm.CreateFilter(ctx, []byte(`{"name":"orphan","owner":"nobody","methods":["PUT"],"stages":["gateway"]}`), emptyCommand)
	if !errors.Is(err, meta.ErrTenantNotFound) {
		t.Fatalf("unknown owner: %v", err)
	}

	// The owner's policies may use it; another tenant's, ALL and groups
	// may not, with a precise error.
	if _, res, err := f.svc.Apply(ctx, "FOR TENANT acme DO SET mask WITH level=2"); err != nil || !res.Valid {
		t.Fatalf("owner's policy: %v %+v", err, res.Errors)
	}
	for _, text := range []string{"FOR TENANT other DO SET mask", "FOR ALL DO SET mask", "FOR TENANT acme, TENANT other DO SET mask"} {
		res, err := f.svc.Validate(ctx, text)
		if err != nil || res.Valid || !strings.Contains(res.Errors[0].Message, "filter mask belongs to tenant acme") {
			t.Errorf("%s: %v %+v", text, err, res.Errors)
		}
	}

	// An update that would break the stored policy is refused; one that
	// keeps it valid makes version 2.
	_, err = f.adm.UpdateFilter(ctx, "mask", []byte(`{"owner":"other"}`), nil)
	wantErr(t, err, admin.ErrConflict, "would no longer be valid")
	_, err = f.adm.UpdateFilter(ctx, "mask", []byte(`{"params":[]}`), nil)
	wantErr(t, err, admin.ErrConflict, "would no longer be valid")
	up, err := f.adm.UpdateFilter(ctx, "mask", []byte(`{"doc":"masks things"}`), nil)
	if err != nil || up.Version != 2 || up.Doc != "masks things" || up.Owner != "acme" || len(up.Params) != 1 {
		t.Fatalf("update: %+v %v", up, err)
	}
	if got, _ := f.svc.Lookup("mask"); got.Version != 2 {
		t.Fatalf("registry still at version %d", got.Version)
	}

	// Deleting a filter a policy uses is refused and names the policy.
	err = f.adm.DeleteFilter(ctx, "mask", false)
	wantErr(t, err, admin.ErrConflict, "used by policies p1")
	if err := f.store.DeletePolicy(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	if err := f.adm.DeleteFilter(ctx, "mask", false); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.svc.Lookup("mask"); ok {
		t.Fatal("deleted filter still in the registry")
	}
	err = f.adm.DeleteFilter(ctx, "mask", false)
	if !errors.Is(err, meta.ErrFilterNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
}

func TestReversibleFilterDeleteNeedsForce(t *testing.T) {
	ctx := context.Background()
	f := newFilterFixture(t)
	f.create(t, `{"name":"obf","methods":["PUT","GET"],"stages":["gateway"],"reversible":true}`)
	_, err := f.adm.UpdateFilter(ctx, "obf", []byte(`{"reversible":false}`), nil)
	wantErr(t, err, admin.ErrInvalidInput, "stays reversible")
	wantErr(t, f.adm.DeleteFilter(ctx, "obf", false), admin.ErrConflict, "cannot be read back")
	if err := f.adm.DeleteFilter(ctx, "obf", true); err != nil {
		t.Fatal(err)
	}
}

func TestDependencies(t *testing.T) {
	ctx := context.Background()
	f := newFilterFixture(t)
	d, err := f.adm.PutDependency(ctx, admin.Dependency{Name: "dict", Owner: "acme"}, []byte("words"))
	if err != nil || d.Size != 5 || d.SHA256 != wasm.Digest([]byte("words")) {
		t.Fatalf("put: %+v %v", d, err)
	}
	// Only acme's filters may mount acme's dependency.
	_, err = f.adm.CreateFilter(ctx, []byte(`{"name":"shared","methods":["PUT"],"stages":["gateway"],"dependencies":["dict"]}`), emptyCommand)
	wantErr(t, err, admin.ErrInvalidInput, "belongs to tenant acme")
	_, err = f.adm.CreateFilter(ctx, []byte(`{"name":"x","methods":["PUT"],"stages":["gateway"],"dependencies":["nope"]}`), emptyCommand)
	if !errors.Is(err, meta.ErrDependencyNotFound) {
		t.Fatalf("unknown dependency: %v", err)
	}
	f.create(t, `{"name":"reader","owner":"acme","methods":["PUT"],"stages":["gateway"],"dependencies":["dict"]}`)
	if _, ok := f.svc.Lookup("reader"); !ok {
		t.Fatal("a filter with a dependency did not load")
	}
	wantErr(t, f.adm.DeleteDependency(ctx, "dict"), admin.ErrConflict, "used by filters reader")
	_, err = f.adm.PutDependency(ctx, admin.Dependency{Name: "dict"}, []byte("other"))
	wantErr(t, err, admin.ErrConflict, "change its owner")
	// Same owner: new content, same name.
	if d, err = f.adm.PutDependency(ctx, admin.Dependency{Name: "dict", Owner: "acme"}, []byte("more words")); err != nil || d.Size != 10 {
		t.Fatalf("replace: %+v %v", d, err)
	}
	ds, _ := f.adm.ListDependencies(ctx)
	if len(ds) != 1 || ds[0].Name != "dict" {
		t.Fatalf("list %+v", ds)
	}
	if err := f.adm.DeleteFilter(ctx, "reader", false); err != nil {
		t.Fatal(err)
	}
	if err := f.adm.DeleteDependency(ctx, "dict"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.adm.GetDependency(ctx, "dict"); !errors.Is(err, meta.ErrDependencyNotFound) {
		t.Fatalf("get deleted: %v", err)
	}
}

func containsFilter(fs []admin.FilterInfo, name string) bool {
	for _, f := range fs {
		if f.Name == name {
			return true
		}
	}
	return false
}

// TestDependencyContentsArePinnedPerVersion: a new content of a
// dependency is a new version of the filters declaring it; a reversible
// filter's old version keeps mounting the content it was created with,
// whose data is kept until no kept version pins it.
func TestDependencyContentsArePinnedPerVersion(t *testing.T) {
	ctx := context.Background()
	f := newFilterFixture(t)
	blobOf := func(name string) string {
		d, err := f.store.GetDependency(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return d.Blob
	}
	spec := func(name string) *wasm.Spec {
		e, err := f.store.GetFilter(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		s, _, err := wasm.ParseSpec(e.Spec)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	kept := func(blob string) bool {
		_, err := f.store.GetFilterBlob(ctx, blob)
		if err != nil && !errors.Is(err, meta.ErrBlobNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	if _, err := f.adm.PutDependency(ctx, admin.Dependency{Name: "dict", Owner: "acme"}, []byte("words one")); err != nil {
		t.Fatal(err)
	}
	b1 := blobOf("dict")
	f.create(t, `{"name":"obf","owner":"acme","methods":["PUT","GET"],"stages":["gateway"],"reversible":true,"dependencies":["dict"]}`)
	f.create(t, `{"name":"plain","owner":"acme","methods":["PUT"],"stages":["gateway"],"dependencies":["dict"]}`)
	if m := spec("obf").Modules; len(m) != 1 || !m[0].Pinned || len(m[0].Deps) != 1 || m[0].Deps[0].Blob != b1 {
		t.Fatalf("version 1 pins %+v, want %s", m, b1)
	}

	// New content: both filters get a version mounting it; obf keeps
	// version 1 with the old content, whose data stays.
	if _, err := f.adm.PutDependency(ctx, admin.Dependency{Name: "dict", Owner: "acme"}, []byte("words two")); err != nil {
		t.Fatal(err)
	}
	b2 := blobOf("dict")
	obf := spec("obf")
	if obf.Version != 2 || len(obf.Modules) != 2 || obf.Modules[0].Deps[0].Blob != b1 || obf.Modules[1].Deps[0].Blob != b2 ||
		obf.Modules[0].Blob != obf.Modules[1].Blob {
		t.Fatalf("obf after the dependency changed: %+v", obf)
	}
	if p := spec("plain"); p.Version != 2 || len(p.Modules) != 1 || p.Modules[0].Deps[0].Blob != b2 {
		t.Fatalf("plain after the dependency changed: %+v", p)
	}
	if !kept(b1) || !kept(b2) {
		t.Fatal("the data of a pinned content was dropped")
	}
	if in, ok := f.svc.Lookup("obf"); !ok || in.Version != 2 {
		t.Fatal("the registry does not run obf version 2")
	}
	// The same content again changes nothing.
	if _, err := f.adm.PutDependency(ctx, admin.Dependency{Name: "dict", Owner: "acme", Doc: "same"}, []byte("words two")); err != nil {
		t.Fatal(err)
	}
	if v := spec("obf").Version; v != 2 {
		t.Fatalf("an unchanged content made version %d", v)
	}

	// Once no kept version pins the old content, its data goes.
	if err := f.adm.DeleteFilter(ctx, "obf", true); err != nil {
		t.Fatal(err)
	}
	if kept(b1) || !kept(b2) {
		t.Fatalf("after obf went: old content kept %v, current kept %v", kept(b1), kept(b2))
	}

	// A dependency deleted while a kept version pins it keeps its data.
	f.create(t, `{"name":"obf2","owner":"acme","methods":["PUT","GET"],"stages":["gateway"],"reversible":true,"dependencies":["dict"]}`)
	if _, err := f.adm.UpdateFilter(ctx, "obf2", []byte(`{"dependencies":[]}`), nil); err != nil {
		t.Fatal(err)
	}
	if err := f.adm.DeleteFilter(ctx, "plain", false); err != nil {
		t.Fatal(err)
	}
	if err := f.adm.DeleteDependency(ctx, "dict"); err != nil {
		t.Fatal(err)
	}
	if !kept(b2) {
		t.Fatal("the data obf2 version 1 pins went with the dependency")
	}
	if _, ok := f.svc.Lookup("obf2"); !ok {
		t.Fatal("obf2 no longer loads once its old version's dependency is deleted")
	}
	if err := f.adm.DeleteFilter(ctx, "obf2", true); err != nil {
		t.Fatal(err)
	}
	if kept(b2) {
		t.Fatal("the data nothing pins any more was kept")
	}
}
