package wasm

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/filter/builtin"
)

// The benchmarks compare 1 MiB through a WASM filter with the same
// transform in native Go, and measure the cost of starting an instance
// (an empty stream through the WASM noop). Figures: docs/filters.md.

const benchSize = 1 << 20

func benchTransform(b *testing.B, f filter.Transformer) {
	in := randBytes(benchSize)
	b.SetBytes(benchSize)
	b.ResetTimer()
	for b.Loop() {
		out, err := f.Transform(context.Background(), &filter.Request{Size: benchSize}, bytes.NewReader(in))
		if err != nil {
			b.Fatal(err)
		}
		if n, err := io.Copy(io.Discard, out); err != nil || n != benchSize {
			b.Fatalf("%d bytes, %v", n, err)
		}
	}
}

func BenchmarkNoop(b *testing.B) {
	b.Run("native", func(b *testing.B) {
		in, _ := builtin.NewRegistry().Lookup("noop")
		f, err := in.New(nil, filter.Env{})
		if err != nil {
			b.Fatal(err)
		}
		benchTransform(b, f.(filter.Transformer))
	})
	b.Run("wasm", func(b *testing.B) {
		benchTransform(b, newFilter(b, "noop", basicInfo("noop"), Limits{}, nil).(filter.Transformer))
	})
}

// xorReader is the native Go version of examples/filters/xor.
type xorReader struct {
	r   io.Reader
	key []byte
	pos int
}

func (x *xorReader) Read(p []byte) (int, error) {
	n, err := x.r.Read(p)
	for i := range p[:n] {
		p[i] ^= x.key[x.pos]
		if x.pos++; x.pos == len(x.key) {
			x.pos = 0
		}
	}
	return n, err
}

func BenchmarkXor(b *testing.B) {
	in := randBytes(benchSize)
	key := []byte("s3cr3t")
	b.Run("native", func(b *testing.B) {
		b.SetBytes(benchSize)
		for b.Loop() {
			// bufio-free copy with the module's 256 KiB buffer.
			if _, err := io.CopyBuffer(io.Discard, &xorReader{r: bytes.NewReader(in), key: key}, make([]byte, 256<<10)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wasm", func(b *testing.B) {
		f := newFilter(b, "xor", xorInfo(), Limits{}, filter.Params{"key": string(key)}).(filter.Encoder)
		b.SetBytes(benchSize)
		b.ResetTimer()
		for b.Loop() {
			out, _, err := f.Encode(context.Background(), &filter.Request{Size: benchSize}, bytes.NewReader(in))
			if err != nil {
				b.Fatal(err)
			}
			if n, err := io.Copy(io.Discard, out); err != nil || n != benchSize {
				b.Fatalf("%d bytes, %v", n, err)
			}
		}
	})
}

// BenchmarkInstanceStart is one request's fixed cost: instantiate the Go
// noop module, run its runtime's start-up on an empty stdin, exit.
func BenchmarkInstanceStart(b *testing.B) {
	f := newFilter(b, "noop", basicInfo("noop"), Limits{}, nil).(filter.Transformer)
	for b.Loop() {
		out, err := f.Transform(context.Background(), &filter.Request{Size: 0}, bytes.NewReader(nil))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPipeline streams 1 MiB through n chained WASM noops, as a
// request whose policies set n filters does: the difference between n and
// n+1 is what one more pipelined filter costs.
func BenchmarkPipeline(b *testing.B) {
	for _, n := range []int{1, 2, 4} {
		b.Run(string(rune('0'+n)), func(b *testing.B) {
			fs := make([]filter.Transformer, n)
			for i := range fs {
				fs[i] = newFilter(b, "noop", basicInfo("noop"), Limits{}, nil).(filter.Transformer)
			}
			in := randBytes(benchSize)
			b.SetBytes(benchSize)
			b.ResetTimer()
			for b.Loop() {
				var r io.Reader = bytes.NewReader(in)
				for _, f := range fs {
					out, err := f.Transform(context.Background(), &filter.Request{Size: benchSize}, r)
					if err != nil {
						b.Fatal(err)
					}
					r = out
				}
				if n, err := io.Copy(io.Discard, r); err != nil || n != benchSize {
					b.Fatalf("%d bytes, %v", n, err)
				}
			}
		})
	}
}
