package native

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/facet-sds/facet/internal/filter"
)

func TestNoopPassesThrough(t *testing.T) {
	reg := testRegistry()
	f := newFilter(t, reg, "noop", nil, filter.Env{})
	for _, size := range []int{0, 1, 4095, 1 << 20} {
		plain := randData(uint64(size), size)
		stored, rec := encode(t, f, plain)
		if !bytes.Equal(stored, plain) {
			t.Fatalf("size %d: noop changed the bytes", size)
		}
		if rec.Filter != "noop" || rec.Version != noopVersion || rec.Size != int64(size) || len(rec.Params) != 0 {
			t.Fatalf("size %d: record %+v", size, rec)
		}
		ms := newMemSource(stored)
		src := decode(t, f, rec, ms)
		if src != filter.Source(ms) {
			t.Fatal("Decode does not return src itself")
		}
	}
}

// The encoded stream reads straight from the caller's reader: no buffer
// of its own, and nothing read ahead.
func TestNoopDoesNotCopy(t *testing.T) {
	f := newFilter(t, testRegistry(), "noop", nil, filter.Env{}).(*noop)
	plain := []byte("abcdefghij")
	src := &countingReader{r: bytes.NewReader(plain)}
	r, _, err := f.Encode(context.Background(), testReq, src)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3)
	if n, _ := r.Read(buf); n != 3 || src.n != 3 {
		t.Fatalf("read %d, source gave %d", n, src.n)
	}
	in := bytes.NewReader(plain)
	out, err := f.Transform(context.Background(), testReq, in)
	if err != nil || out != io.Reader(in) {
		t.Fatal("Transform does not return its input")
	}
}

func TestNoopRecord(t *testing.T) {
	f := newFilter(t, testRegistry(), "noop", nil, filter.Env{})
	_, rec := encode(t, f, []byte("hello"))
	dec := f.(filter.Decoder)
	if _, err := dec.Decode(context.Background(), testReq, rec, newMemSource([]byte("hell"))); !errors.Is(err, filter.ErrIntegrity) {
		t.Fatalf("size mismatch: %v", err)
	}
	bad := rec
	bad.Filter = "compression"
	if _, err := dec.Decode(context.Background(), testReq, bad, newMemSource([]byte("hello"))); !errors.Is(err, filter.ErrIntegrity) {
		t.Fatalf("foreign record: %v", err)
	}
	bad = rec
	bad.Version = 2
	if _, err := dec.Decode(context.Background(), testReq, bad, newMemSource([]byte("hello"))); err == nil {
		t.Fatal("future version accepted")
	}
	in, _ := testRegistry().Lookup("noop")
	if _, err := in.New(filter.Params{"x": "1"}, filter.Env{}); err == nil || err.Error() != `noop: unknown parameter "x" (it takes none)` {
		t.Fatalf("New with a parameter: %v", err)
	}
}

// BenchmarkNoop is the cost of one pass-through filter on a 1 MiB body,
// PUT and GET, against reading the body directly.
func BenchmarkNoop(b *testing.B) {
	plain := randData(1, 1<<20)
	f := newFilter(b, testRegistry(), "noop", nil, filter.Env{})
	buf := make([]byte, 32<<10)
	b.Run("direct", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		ms := newMemSource(plain)
		for b.Loop() {
			io.CopyBuffer(io.Discard, struct{ io.Reader }{bytes.NewReader(plain)}, buf)
			rc, _ := ms.Open(context.Background(), 0, ms.Size())
			io.CopyBuffer(io.Discard, struct{ io.Reader }{rc}, buf)
			rc.Close()
		}
	})
	b.Run("filter", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		ms := newMemSource(plain)
		for b.Loop() {
			r, rec, _ := f.(filter.Encoder).Encode(context.Background(), testReq, bytes.NewReader(plain))
			io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, buf)
			record, err := rec()
			if err != nil {
				b.Fatal(err)
			}
			src, err := f.(filter.Decoder).Decode(context.Background(), testReq, record, ms)
			if err != nil {
				b.Fatal(err)
			}
			rc, _ := src.Open(context.Background(), 0, src.Size())
			io.CopyBuffer(io.Discard, struct{ io.Reader }{rc}, buf)
			rc.Close()
		}
	})
}
