package native

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/facet-sds/facet/internal/filter"
)

// stack encodes plain through filters in order, as the data plane runs a
// PUT pipeline, and returns the stored bytes and the records in order.
func stack(t testing.TB, filters []filter.Filter, plain io.Reader) ([]byte, []filter.Record) {
	t.Helper()
	stream := plain
	var recs []func() (filter.Record, error)
	for _, f := range filters {
		out, rec, err := f.(filter.Encoder).Encode(context.Background(), testReq, stream)
		if err != nil {
			t.Fatal(err)
		}
		stream, recs = out, append(recs, rec)
	}
	var stored bytes.Buffer
	if _, err := io.CopyBuffer(&stored, struct{ io.Reader }{stream}, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	records := make([]filter.Record, len(recs))
	for i, rec := range recs {
		var err error
		if records[i], err = rec(); err != nil {
			t.Fatal(err)
		}
	}
	return stored.Bytes(), records
}

// unstack decodes in reverse order, as the data plane undoes a plan.
func unstack(t testing.TB, filters []filter.Filter, records []filter.Record, stored filter.Source) filter.Source {
	t.Helper()
	src := stored
	for i := len(filters) - 1; i >= 0; i-- {
		var err error
		if src, err = filters[i].(filter.Decoder).Decode(context.Background(), testReq, records[i], src); err != nil {
			t.Fatalf("undo %s: %v", records[i].Filter, err)
		}
	}
	return src
}

// Compression at the gateway, then encryption at storage: a range reads
// only the packages holding the frames it needs.
func TestStackedCompressionEncryption(t *testing.T) {
	reg := testRegistry()
	keys := newTestKeys()
	plain := mixedData(40*testFrame + 4321)
	size := int64(len(plain))
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			comp := newFilter(t, reg, "compression", compressionParams(eng, testFrame), filter.Env{})
			enc := newFilter(t, reg, "encryption", nil, filter.Env{Keys: keys})
			noop := newFilter(t, reg, "noop", nil, filter.Env{})
			filters := []filter.Filter{comp, noop, enc}
			stored, records := stack(t, filters, bytes.NewReader(plain))
			ms := newMemSource(stored)
			src := unstack(t, filters, records, ms)
			if src.Size() != size {
				t.Fatalf("decoded size %d, want %d", src.Size(), size)
			}
			// The compressed view, to compute what each range needs.
			ix, err := parseFrameIndex(records[0])
			if err != nil {
				t.Fatal(err)
			}
			checkRanges(t, src, ms, plain, rangesFor(3, size, testFrame), func(off, n, requested int64, _ int) {
				if n == 0 {
					return
				}
				// The frames the range overlaps, rounded out to whole
				// packages: at most one frame and one package on each side.
				first, last := off/testFrame, (off+n-1)/testFrame
				span := ix.off[last+1] - ix.off[first]
				if bound := span + span/darePayload*dareOverhead + 2*darePackage; requested > bound {
					t.Fatalf("range [%d,+%d): %d stored bytes read for %d compressed, bound %d", off, n, requested, span, bound)
				}
				if bound := n + 2*(testFrame+crcSize) + (n/darePayload+4)*darePackage; requested > bound {
					t.Fatalf("range [%d,+%d): %d stored bytes read, not proportional to the range", off, n, requested)
				}
			})

			// A flipped stored byte: the authenticated layer refuses it.
			bad := bytes.Clone(stored)
			bad[len(bad)/3] ^= 0x80
			if _, err := readRange(unstack(t, filters, records, newMemSource(bad)), 0, size); !errors.Is(err, filter.ErrIntegrity) {
				t.Fatalf("flipped stored byte: %v", err)
			}
		})
	}
}

// The other order works too, though compressing ciphertext saves nothing:
// every frame is stored raw, at 4 bytes per frame.
func TestStackedEncryptionCompression(t *testing.T) {
	reg := testRegistry()
	plain := textData(8, 9*testFrame+1)
	enc := newFilter(t, reg, "encryption", nil, filter.Env{Keys: newTestKeys()})
	comp := newFilter(t, reg, "compression", compressionParams("zstd", testFrame), filter.Env{})
	filters := []filter.Filter{enc, comp}
	stored, records := stack(t, filters, bytes.NewReader(plain))
	frames := (records[0].Size + testFrame - 1) / testFrame
	if int64(len(stored)) != records[0].Size+crcSize*frames {
		t.Fatalf("ciphertext compressed: %d stored for %d", len(stored), records[0].Size)
	}
	ms := newMemSource(stored)
	src := unstack(t, filters, records, ms)
	checkRanges(t, src, ms, plain, rangesFor(5, int64(len(plain)), testFrame)[:30], func(int64, int64, int64, int) {})
}

// tiledReader streams size bytes by repeating block: a large object
// without holding it twice.
func tiledReader(block []byte, size int64) io.Reader {
	var rs []io.Reader
	for left := size; left > 0; left -= int64(len(block)) {
		rs = append(rs, bytes.NewReader(block[:min(int64(len(block)), left)]))
	}
	return io.MultiReader(rs...)
}

// BenchmarkRangeGET reads 1 MiB at random offsets of a 1 GiB object,
// stored plain or compressed then encrypted (1 MiB frames, DARE packages),
// all in memory: the cost of the transforms alone, with no disk to hide it.
func BenchmarkRangeGET(b *testing.B) {
	const (
		objSize = 1 << 30
		rangeN  = 1 << 20
	)
	block := textData(77, 64<<20)
	plain := make([]byte, 0, objSize)
	for len(plain) < objSize {
		plain = append(plain, block[:min(len(block), objSize-len(plain))]...)
	}
	reg := testRegistry()
	keys := newTestKeys()
	buf := make([]byte, rangeN)
	run := func(b *testing.B, src filter.Source, stored *memSource) {
		r := rand.New(rand.NewPCG(1, 2))
		stored.reset()
		var reads int64
		for b.Loop() {
			off := r.Int64N(objSize - rangeN)
			rc, err := src.Open(context.Background(), off, rangeN)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(rc, buf); err != nil {
				b.Fatal(err)
			}
			rc.Close()
			reads++
		}
		requested, _ := stored.reset()
		b.SetBytes(rangeN)
		b.ReportMetric(float64(requested)/float64(reads)/(1<<20), "stored-MiB/op")
	}
	b.Run("plain", func(b *testing.B) {
		ms := newMemSource(plain)
		run(b, ms, ms)
	})
	b.Run("aes", func(b *testing.B) {
		enc := newFilter(b, reg, "encryption", nil, filter.Env{Keys: keys})
		stored, records := stack(b, []filter.Filter{enc}, tiledReader(block, objSize))
		ms := newMemSource(stored)
		run(b, unstack(b, []filter.Filter{enc}, records, ms), ms)
	})
	for _, c := range []struct {
		name string
		p    filter.Params
	}{
		{"zstd", filter.Params{"engine": "zstd"}},
		{"zstd-256k", filter.Params{"engine": "zstd", "frame": "262144"}},
		{"lz4", filter.Params{"engine": "lz4"}},
	} {
		comp := newFilter(b, reg, "compression", c.p, filter.Env{})
		enc := newFilter(b, reg, "encryption", nil, filter.Env{Keys: keys})
		filters := []filter.Filter{comp, enc}
		stored, records := stack(b, filters, tiledReader(block, objSize))
		b.Run(fmt.Sprintf("%s+aes", c.name), func(b *testing.B) {
			ms := newMemSource(stored)
			run(b, unstack(b, filters, records, ms), ms)
		})
	}
}
