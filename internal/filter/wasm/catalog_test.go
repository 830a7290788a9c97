package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/meta"
)

// memStore is the metadata store as a Catalog reads it.
type memStore struct {
	blobs map[string][]byte
	deps  []meta.Dependency
	gets  int
}

func (s *memStore) GetFilterBlob(_ context.Context, key string) ([]byte, error) {
	s.gets++
	b, ok := s.blobs[key]
	if !ok {
		return nil, meta.ErrBlobNotFound
	}
	return b, nil
}

func (s *memStore) ListDependencies(context.Context) ([]meta.Dependency, error) { return s.deps, nil }

func (s *memStore) register(t *testing.T, prev *Spec, d Descriptor, code []byte) (*Spec, meta.FilterEntry) {
	t.Helper()
	deps := map[string]meta.Dependency{}
	for _, dep := range s.deps {
		deps[dep.Name] = dep
	}
	pins, err := Pins(d, deps)
	if err != nil {
		t.Fatal(err)
	}
	spec, blob, drop, err := Update(prev, d, code, pins)
	if err != nil {
		t.Fatal(err)
	}
	if blob != "" {
		s.blobs[blob] = code
	}
	for _, k := range drop {
		delete(s.blobs, k)
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	return spec, meta.FilterEntry{Name: d.Name, Spec: raw}
}

func newCatalog(t *testing.T, st Store) *Catalog {
	t.Helper()
	c, err := NewCatalog(CatalogConfig{Runtime: testRuntime(t), Store: st, Grace: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// An object written by version 1 is undone by version 1's module after
// the filter was updated to other code; new objects use version 2.
func TestCatalogVersionsDecodeTheirObjects(t *testing.T) {
	ctx := context.Background()
	st := &memStore{blobs: map[string][]byte{}}
	c := newCatalog(t, st)
	d := Descriptor{Name: "obf", Methods: []filter.Method{filter.MethodPut, filter.MethodGet}, Stages: []filter.Stage{filter.StageGateway},
		Reversible: true, Params: []filter.ParamSpec{{Name: "key", Type: filter.TypeString, Default: "k"}}}
	v1, e1 := st.register(t, nil, d, moduleBytes(t, "xor"))
	infos, err := c.Load(ctx, []meta.FilterEntry{e1})
	if err != nil || len(infos) != 1 || infos[0].Version != 1 || infos[0].Kind != "wasm" {
		t.Fatalf("load v1: %v %v", infos, err)
	}
	plain := []byte("some plain text, long enough to tell the bytes apart")
	stored, rec := encode(t, infos[0], plain)
	if bytes.Equal(stored, plain) {
		t.Fatal("v1 (xor) stored the plain text")
	}
	gets := st.gets
	if _, err := c.Load(ctx, []meta.FilterEntry{e1}); err != nil || st.gets != gets {
		t.Fatalf("a reload fetched the module again (%d -> %d gets): %v", gets, st.gets, err)
	}

	_, e2 := st.register(t, v1, d, moduleBytes(t, "noop"))
	infos, err = c.Load(ctx, []meta.FilterEntry{e2})
	if err != nil || infos[0].Version != 2 {
		t.Fatalf("load v2: %v %v", infos, err)
	}
	if got := decode(t, infos[0], rec, stored); !bytes.Equal(got, plain) {
		t.Fatalf("v1 object through v2's filter: %q", got)
	}
	stored2, rec2 := encode(t, infos[0], plain)
	if !bytes.Equal(stored2, plain) || rec2.Version != 2 {
		t.Fatalf("v2 (noop) stored %q, record %+v", stored2, rec2)
	}
	if got := decode(t, infos[0], rec2, stored2); !bytes.Equal(got, plain) {
		t.Fatalf("v2 object: %q", got)
	}
}

func encode(t *testing.T, in *filter.Info, plain []byte) ([]byte, filter.Record) {
	t.Helper()
	f, err := in.New(filter.Params{"key": "s3cr3t"}, filter.Env{})
	if err != nil {
		t.Fatal(err)
	}
	out, rec, err := f.(filter.Encoder).Encode(context.Background(), &filter.Request{Method: filter.MethodPut, Size: int64(len(plain))}, bytes.NewReader(plain))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(out)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rec()
	if err != nil {
		t.Fatal(err)
	}
	return b, r
}

func decode(t *testing.T, in *filter.Info, rec filter.Record, stored []byte) []byte {
	t.Helper()
	f, err := in.New(nil, filter.Env{})
	if err != nil {
		t.Fatal(err)
	}
	src, err := f.(filter.Decoder).Decode(context.Background(), &filter.Request{Method: filter.MethodGet}, rec, &memSource{b: stored})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := src.Open(context.Background(), 0, src.Size())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Dependencies appear read-only at /deps/<name>, and nothing else of the
// host does.
func TestCatalogMountsDependencies(t *testing.T) {
	ctx := context.Background()
	data := []byte("alpha\nbeta\n")
	st := &memStore{blobs: map[string][]byte{"dep/words": data},
		deps: []meta.Dependency{{Name: "words", SHA256: Digest(data), Blob: "dep/words", Size: int64(len(data))}}}
	c := newCatalog(t, st)
	d := Descriptor{Name: "reader", Methods: []filter.Method{filter.MethodPut}, Stages: []filter.Stage{filter.StageGateway},
		Params: []filter.ParamSpec{{Name: "mode", Type: filter.TypeString}, {Name: "arg", Type: filter.TypeString}}, Dependencies: []string{"words"}}
	_, e := st.register(t, nil, d, moduleBytes(t, "hostile"))
	infos, err := c.Load(ctx, []meta.FilterEntry{e})
	if err != nil {
		t.Fatal(err)
	}
	run := func(p filter.Params) ([]byte, error) {
		f, err := infos[0].New(p, filter.Env{})
		if err != nil {
			t.Fatal(err)
		}
		out, err := f.(filter.Transformer).Transform(ctx, &filter.Request{Method: filter.MethodPut, Size: 1}, bytes.NewReader([]byte("x")))
		if err != nil {
			t.Fatal(err)
		}
		return io.ReadAll(out)
	}
	got, err := run(filter.Params{"mode": "dep", "arg": "words"})
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("dependency read: %q %v", got, err)
	}
	for _, arg := range []string{"../etc/passwd", "../../" + filepath.Base(os.Args[0])} {
		if _, err := run(filter.Params{"mode": "dep", "arg": arg}); !errors.Is(err, ErrExit) {
			t.Errorf("%s: %v, want the module's failure to open it", arg, err)
		}
	}
	if _, err := run(filter.Params{"mode": "write"}); !errors.Is(err, ErrExit) {
		t.Errorf("a write to the file system: %v", err)
	}

	// A spec from before versions pinned their dependencies mounts the
	// current ones: a dependency of another tenant, or a missing one,
	// fails that filter alone.
	var legacy Spec
	if err := json.Unmarshal(e.Spec, &legacy); err != nil {
		t.Fatal(err)
	}
	for i := range legacy.Modules {
		legacy.Modules[i].Deps, legacy.Modules[i].Pinned = nil, false
	}
	raw, _ := json.Marshal(legacy)
	le := meta.FilterEntry{Name: e.Name, Spec: raw}
	if infos, err := c.Load(ctx, []meta.FilterEntry{le}); err != nil || len(infos) != 1 {
		t.Fatalf("a spec without pins did not load: %v", err)
	}
	st.deps[0].Owner = "other"
	if infos, err := c.Load(ctx, []meta.FilterEntry{le}); err == nil || len(infos) != 0 {
		t.Fatalf("another tenant's dependency loaded: %v", err)
	}
	st.deps = nil
	if _, err := c.Load(ctx, []meta.FilterEntry{le}); err == nil {
		t.Fatal("a missing dependency loaded")
	}
	// A pinned version needs its pinned content, whatever the current
	// dependencies are.
	if infos, err := c.Load(ctx, []meta.FilterEntry{e}); err != nil || len(infos) != 1 {
		t.Fatalf("a pinned version did not load without the current dependency: %v", err)
	}
	delete(st.blobs, "dep/words")
	if _, err := newCatalog(t, st).Load(ctx, []meta.FilterEntry{e}); err == nil {
		t.Fatal("a version loaded without its pinned dependency's data")
	}
}

// TestCatalogVersionsMountTheirDependencies: a reversible filter's old
// version, kept to undo the objects it wrote, mounts the dependency
// content it was created with; the current version mounts the new one.
func TestCatalogVersionsMountTheirDependencies(t *testing.T) {
	ctx := context.Background()
	v1data, v2data := []byte("dictionary one\n"), []byte("dictionary two, longer\n")
	st := &memStore{blobs: map[string][]byte{"dep/words/1": v1data},
		deps: []meta.Dependency{{Name: "words", SHA256: Digest(v1data), Blob: "dep/words/1"}}}
	c := newCatalog(t, st)
	d := Descriptor{Name: "dictrev", Methods: []filter.Method{filter.MethodPut}, Stages: []filter.Stage{filter.StageGateway},
		Reversible: true, Dependencies: []string{"words"},
		Params: []filter.ParamSpec{{Name: "mode", Type: filter.TypeString}, {Name: "arg", Type: filter.TypeString}}}
	v1, _ := st.register(t, nil, d, moduleBytes(t, "hostile"))
	// The dependency gets a new content: the filter a new version, same
	// module.
	st.blobs["dep/words/2"] = v2data
	st.deps = []meta.Dependency{{Name: "words", SHA256: Digest(v2data), Blob: "dep/words/2"}}
	_, e2 := st.register(t, v1, d, nil)
	infos, err := c.Load(ctx, []meta.FilterEntry{e2})
	if err != nil || len(infos) != 1 || infos[0].Version != 2 {
		t.Fatalf("load: %v %+v", err, infos)
	}
	f, err := infos[0].New(filter.Params{"mode": "dep", "arg": "words"}, filter.Env{})
	if err != nil {
		t.Fatal(err)
	}
	rev := f.(filter.Reversible)
	// Version 2 (current) writes with the new dictionary.
	enc, _, err := rev.Encode(ctx, &filter.Request{Method: filter.MethodPut, Size: 1}, bytes.NewReader([]byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(enc); err != nil || !bytes.Equal(got, v2data) {
		t.Fatalf("current version read %q, %v; want the new dependency", got, err)
	}
	// Undoing an object version 1 wrote runs version 1 with its own.
	src := &memSource{b: []byte("stored")}
	rec := filter.Record{Filter: "dictrev", Version: 1, Size: src.Size(),
		Params: map[string]string{"mode": "dep", "arg": "words", sizeParam: strconv.Itoa(len(v1data))}}
	view, err := rev.Decode(ctx, &filter.Request{Method: filter.MethodGet}, rec, src)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := view.Open(ctx, 0, view.Size())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if got, err := io.ReadAll(rc); err != nil || !bytes.Equal(got, v1data) {
		t.Fatalf("version 1 read %q, %v; want the dependency it was created with", got, err)
	}
}

func TestCatalogRefusesTamperedBlobs(t *testing.T) {
	st := &memStore{blobs: map[string][]byte{}}
	c := newCatalog(t, st)
	d := Descriptor{Name: "n", Methods: []filter.Method{filter.MethodPut}, Stages: []filter.Stage{filter.StageGateway}}
	spec, e := st.register(t, nil, d, moduleBytes(t, "noop"))
	st.blobs[spec.Modules[0].Blob] = moduleBytes(t, "uppercase")
	if _, err := c.Load(context.Background(), []meta.FilterEntry{e}); err == nil {
		t.Fatal("a module that does not match its digest loaded")
	}
}
