package dataplane

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/storage/fs"
)

// xorFilter is a reversible test filter: every byte XOR k, with a header
// of hdr bytes in front so that stored and logical offsets differ.
type xorFilter struct {
	info *filter.Info
	k    byte
	hdr  int
}

func (f *xorFilter) Info() *filter.Info { return f.info }

func (f *xorFilter) Encode(_ context.Context, _ *filter.Request, plain io.Reader) (io.Reader, func() (filter.Record, error), error) {
	cr := &counter{r: plain}
	x := &xorReader{r: cr, k: f.k}
	out := io.MultiReader(bytes.NewReader(make([]byte, f.hdr)), x)
	return out, func() (filter.Record, error) {
		return filter.Record{Filter: f.info.Name, Version: 1, Params: map[string]string{"k": strconv.Itoa(int(f.k))}, Size: int64(f.hdr) + cr.n}, nil
	}, nil
}

func (f *xorFilter) Decode(_ context.Context, _ *filter.Request, rec filter.Record, src filter.Source) (filter.Source, error) {
	k, _ := strconv.Atoi(rec.Params["k"])
	return &xorSource{src: src, k: byte(k), hdr: int64(f.hdr)}, nil
}

type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(p []byte) (int, error) { n, err := c.r.Read(p); c.n += int64(n); return n, err }

type xorReader struct {
	r io.Reader
	k byte
}

func (x *xorReader) Read(p []byte) (int, error) {
	n, err := x.r.Read(p)
	for i := range p[:n] {
		p[i] ^= x.k
	}
	return n, err
}

type xorSource struct {
	src filter.Source
	k   byte
	hdr int64
}

func (s *xorSource) Size() int64 { return s.src.Size() - s.hdr }
func (s *xorSource) Open(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	rc, err := s.src.Open(ctx, off+s.hdr, n)
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{&xorReader{r: rc, k: s.k}, rc}, nil
}

func testRegistry() *filter.Registry {
	mk := func(name string, k byte, hdr int) *filter.Info {
		in := &filter.Info{Name: name, Version: 1, Reversible: true}
		in.Config = func() filter.Provisioner {
			return filter.ProvisionFunc(func(filter.Env) (filter.Filter, error) {
				return &xorFilter{info: in, k: k, hdr: hdr}, nil
			})
		}
		return in
	}
	return filter.NewRegistry(mk("xa", 0x5a, 3), mk("xb", 0x33, 11))
}

func pipelineOf(t *testing.T, reg *filter.Registry, names ...string) Pipeline {
	var p Pipeline
	for _, n := range names {
		in, _ := reg.Lookup(n)
		f, err := in.New(nil, filter.Env{})
		if err != nil {
			t.Fatal(err)
		}
		p.Steps = append(p.Steps, Step{Stage: filter.StageGateway, Filter: f, Policy: "test"})
	}
	return p
}

// storeWithBucket is a filesystem store (no fsync) holding bucket "bkt",
// closed when the test ends.
func storeWithBucket(t *testing.T) *fs.Store {
	t.Helper()
	ctx := context.Background()
	st, err := fs.Open(ctx, t.TempDir(), fs.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.CreateBucket(ctx, "bkt"); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestPutThenLogicalRanges(t *testing.T) {
	ctx := context.Background()
	reg := testRegistry()
	st := storeWithBucket(t)
	plain := make([]byte, 100_000)
	for i := range plain {
		plain[i] = byte(rand.IntN(256))
	}
	pipe := pipelineOf(t, reg, "xa", "xb")
	req := &filter.Request{Tenant: "t", Bucket: "bkt", Key: "k", Method: filter.MethodPut, Size: int64(len(plain))}
	stored, planOf, err := pipe.Put(ctx, req, bytes.NewReader(plain))
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.PutObject(ctx, "bkt", "k", storage.PutInput{Body: stored, Seal: func(m *storage.ObjectMeta) error {
		plan, err := planOf()
		if err != nil {
			return err
		}
		enc, err := plan.Encode()
		m.Size, m.ETag, m.System = int64(len(plain)), "e", map[string]string{PlanKey: enc}
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	if info.StoredSize != int64(len(plain))+14 || !Transformed(info.Meta) {
		t.Fatalf("stored %d, meta %v", info.StoredSize, info.Meta.System)
	}
	d := Decoders{Registry: reg}
	src, err := d.Logical(ctx, req, st, info)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int64{{0, 100_000}, {0, 1}, {99_999, 1}, {12_345, 54_321}, {50_000, 0}} {
		rc, err := src.Open(ctx, r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if !bytes.Equal(got, plain[r[0]:r[0]+r[1]]) {
			t.Fatalf("range %v differs", r)
		}
	}
	// An overwrite between opens is detected, never mixed.
	if _, err := st.PutObject(ctx, "bkt", "k", storage.PutInput{Body: bytes.NewReader(make([]byte, 100_014)), Meta: storage.ObjectMeta{ETag: "other", Size: 100_014}}); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Open(ctx, 0, 10); err != ErrChanged {
		t.Fatalf("open after overwrite: %v", err)
	}
}

func TestPartsPlanConcat(t *testing.T) {
	ctx := context.Background()
	reg := testRegistry()
	st := storeWithBucket(t)
	up, err := st.CreateUpload(ctx, "bkt", "mp", storage.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	var plans []PartPlan
	var cps []storage.CompletePart
	for i, n := range []int{7000, 1, 3333} {
		data := bytes.Repeat([]byte{byte('a' + i)}, n)
		all = append(all, data...)
		names := []string{"xa"}
		if i == 1 {
			names = nil // a part written before a policy existed
		}
		pipe := pipelineOf(t, reg, names...)
		stored, planOf, err := pipe.Put(ctx, &filter.Request{}, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		part, err := st.PutPart(ctx, "bkt", "mp", up.UploadID, i+1, storage.PutInput{Body: stored, Seal: func(m *storage.ObjectMeta) error {
			m.Size, m.ETag = int64(n), strconv.Itoa(i)
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		plan, _ := planOf()
		plans = append(plans, PartPlan{Size: int64(n), Stored: part.StoredSize, Plan: plan})
		cps = append(cps, storage.CompletePart{Number: i + 1, ETag: part.ETag})
	}
	enc, err := EncodeParts(plans)
	if err != nil || enc == "" {
		t.Fatalf("%q %v", enc, err)
	}
	info, err := st.CompleteUpload(ctx, "bkt", "mp", up.UploadID, cps, storage.ObjectMeta{Size: int64(len(all)), ETag: "x-3", System: map[string]string{PartsKey: enc}})
	if err != nil {
		t.Fatal(err)
	}
	src, err := Decoders{Registry: reg}.Logical(ctx, &filter.Request{}, st, info)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int64{{0, int64(len(all))}, {6990, 20}, {7000, 1}, {7001, 3333}} {
		rc, err := src.Open(ctx, r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if !bytes.Equal(got, all[r[0]:r[0]+r[1]]) {
			t.Fatalf("range %v: got %q...", r, got[:min(len(got), 20)])
		}
	}

	// A part whose recorded logical size disagrees with what it decodes to
	// is refused, not served short or long.
	plans[2].Size++
	if enc, err = EncodeParts(plans); err != nil {
		t.Fatal(err)
	}
	info.Meta.System = map[string]string{PartsKey: enc}
	if _, err := (Decoders{Registry: reg}).Logical(ctx, &filter.Request{}, st, info); !errors.Is(err, filter.ErrIntegrity) {
		t.Fatalf("part with a wrong recorded size: %v; want ErrIntegrity", err)
	}
}

func TestDecodePlanStrict(t *testing.T) {
	for _, bad := range []string{`{"v":2,"r":[]}`, `{"v":1,"r":[{"f":""}]}`, `{"v":1,"x":1}`, `not json`, `{"v":1,"r":[{"f":"a","n":-1}]}`} {
		if _, err := DecodePlan(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	p := Plan{Records: []filter.Record{{Filter: "compression", Version: 1, Params: map[string]string{"engine": "zstd"}, Size: 10}}}
	enc, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodePlan(enc)
	if err != nil || len(back.Records) != 1 || back.Records[0].Params["engine"] != "zstd" {
		t.Fatalf("%+v %v", back, err)
	}
	if _, err := (Decoders{Registry: testRegistry()}).Open(context.Background(), nil, Plan{Records: []filter.Record{{Filter: "nope", Version: 1}}}, nil); err == nil {
		t.Fatal("unknown filter accepted")
	}
}

func FuzzDecodePlan(f *testing.F) {
	f.Add(`{"v":1,"r":[{"f":"compression","v":1,"p":{"engine":"zstd"},"n":10}]}`)
	f.Add(`{"v":1,"parts":[]}`)
	f.Fuzz(func(t *testing.T, s string) {
		p, err := DecodePlan(s)
		if err == nil {
			if _, err := p.Encode(); err != nil {
				t.Fatal(err)
			}
		}
		_, _ = decodeParts(s)
	})
}
