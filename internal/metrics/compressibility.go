package metrics

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/s2"

	"github.com/facet-sds/facet/internal/obs"
	"github.com/facet-sds/facet/internal/policy"
)

// Compressibility is compressibility: how much write payloads shrink,
// as original size over compressed size (2 means half), sampled from the
// stream so that `WHEN compressibility > 2 DO SET compression` works
// (seeds/000 §7). Payloads are cut in chunks of chunkSize; a chunk is
// compressed with S2 (Snappy-class, ~1 GB/s) when it is the first of a
// target in the period, or one in every `every` chunks otherwise. The cost
// is therefore bounded by 1/every of the write bandwidth's compression
// time, plus one chunk per target per period. S2 shrinks text less than
// zstd or gzip do: the value is a lower bound of what the compression
// filter achieves. Nodes merge as total original over total compressed
// bytes.
func Compressibility(chunkSize, every int) Module {
	if chunkSize <= 0 {
		chunkSize = DefaultSampleChunk
	}
	if every <= 0 {
		every = DefaultSampleEvery
	}
	c := &compressibility{chunk: chunkSize, every: uint64(every)}
	c.bufs.New = func() any { b := make([]byte, 0, chunkSize); return &b }
	c.dsts.New = func() any { b := make([]byte, s2.MaxEncodedLen(chunkSize)); return &b }
	return c
}

// Sampling defaults: one 64 KiB chunk in 16.
const (
	DefaultSampleChunk = 64 << 10
	DefaultSampleEvery = 16
)

type compressibility struct {
	chunk int
	every uint64
	n     atomic.Uint64 // chunks seen, for 1-in-every
	bufs  sync.Pool     // *[]byte, chunk capacity
	dsts  sync.Pool     // *[]byte, s2.MaxEncodedLen(chunk)
}

func (*compressibility) Info() Info {
	return described("compressibility", MergeMean, policy.KindRatio)
}

// compCell is a Ratio of original to compressed bytes that also
// remembers whether it was sampled in the current period.
type compCell struct {
	Ratio
	period  atomic.Int64 // flushes so far
	sampled atomic.Int64 // period of the last claimed sample, plus one
}

func (c *compCell) Flush(elapsed time.Duration) Sample {
	c.period.Add(1)
	return c.Ratio.Flush(elapsed)
}

// claim reports whether the cell has had no sample yet this period, and
// takes the period's sample if so.
func (c *compCell) claim() bool {
	p := c.period.Load() + 1
	old := c.sampled.Load()
	return old != p && c.sampled.CompareAndSwap(old, p)
}

func (*compressibility) NewCell() Cell { return new(compCell) }

func (m *compressibility) Payload(o *obs.Observation, cs Cells) ChunkWatcher {
	if !isPut(o.Op) || cs.n == 0 {
		return nil
	}
	return &compWatcher{m: m, cs: cs}
}

// compWatcher follows one payload.
type compWatcher struct {
	m   *compressibility
	cs  Cells
	buf *[]byte // the current chunk's bytes when it is sampled
	pos int     // bytes into the current chunk
}

func (w *compWatcher) Chunk(p []byte) {
	for len(p) > 0 {
		if w.pos == 0 && w.sample() {
			w.buf = w.m.bufs.Get().(*[]byte)
			*w.buf = (*w.buf)[:0]
		}
		take := min(len(p), w.m.chunk-w.pos)
		if w.buf != nil {
			*w.buf = append(*w.buf, p[:take]...)
		}
		w.pos += take
		p = p[take:]
		if w.pos == w.m.chunk {
			w.endChunk()
		}
	}
}

func (w *compWatcher) End() {
	if w.pos > 0 {
		w.endChunk()
	}
}

// sample decides whether the chunk starting now is compressed.
func (w *compWatcher) sample() bool {
	claimed := false
	for i := range w.cs.n {
		if w.cs.c[i].(*compCell).claim() {
			claimed = true
		}
	}
	return w.m.n.Add(1)%w.m.every == 0 || claimed
}

func (w *compWatcher) endChunk() {
	w.pos = 0
	if w.buf == nil {
		return
	}
	src := *w.buf
	dst := w.m.dsts.Get().(*[]byte)
	n := len(s2.Encode(*dst, src))
	w.m.dsts.Put(dst)
	for i := range w.cs.n {
		w.cs.c[i].(*compCell).Add(int64(len(src)), int64(n))
	}
	w.m.bufs.Put(w.buf)
	w.buf = nil
}
