package filter

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
)

func TestNoopPassesThrough(t *testing.T) {
	reg := NewBuiltinRegistry()
	f := newFilter(t, reg, "noop", nil, Env{})
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
		if src != Source(ms) {
			t.Fatal("Decode does not return src itself")
		}
	}
}

// The encoded stream reads straight from the caller's reader: no buffer
// of its own, and nothing read ahead.
func TestNoopDoesNotCopy(t *testing.T) {
	f := newFilter(t, NewBuiltinRegistry(), "noop", nil, Env{}).(*noop)
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
	f := newFilter(t, NewBuiltinRegistry(), "noop", nil, Env{})
	_, rec := encode(t, f, []byte("hello"))
	dec := f.(Decoder)
	if _, err := dec.Decode(context.Background(), testReq, rec, newMemSource([]byte("hell"))); !errors.Is(err, ErrIntegrity) {
		t.Fatalf("size mismatch: %v", err)
	}
	bad := rec
	bad.Filter = "compression"
	if _, err := dec.Decode(context.Background(), testReq, bad, newMemSource([]byte("hello"))); !errors.Is(err, ErrIntegrity) {
		t.Fatalf("foreign record: %v", err)
	}
	bad = rec
	bad.Version = 2
	if _, err := dec.Decode(context.Background(), testReq, bad, newMemSource([]byte("hello"))); err == nil {
		t.Fatal("future version accepted")
	}
	in, _ := NewBuiltinRegistry().Lookup("noop")
	if _, err := in.New(Params{"x": "1"}, Env{}); err == nil || err.Error() != `noop: unknown parameter "x" (it takes none)` {
		t.Fatalf("New with a parameter: %v", err)
	}
}

// BenchmarkNoop is the cost of one pass-through filter on a 1 MiB body,
// PUT and GET, against reading the body directly.
func BenchmarkNoop(b *testing.B) {
	plain := randData(1, 1<<20)
	f := newFilter(b, NewBuiltinRegistry(), "noop", nil, Env{})
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
			r, rec, _ := f.(Encoder).Encode(context.Background(), testReq, bytes.NewReader(plain))
			io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, buf)
			record, err := rec()
			if err != nil {
				b.Fatal(err)
			}
			src, err := f.(Decoder).Decode(context.Background(), testReq, record, ms)
			if err != nil {
				b.Fatal(err)
			}
			rc, _ := src.Open(context.Background(), 0, src.Size())
			io.CopyBuffer(io.Discard, struct{ io.Reader }{rc}, buf)
			rc.Close()
		}
	})
}
