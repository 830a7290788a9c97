package qos

import (
	"context"
	"io"
	"sync/atomic"
	"time"
)

// Meter is one byte flow's bucket and counters, shared by every stream of
// the flow. The Limiter's tenant × class flows and the context stage's
// (internal/flowctx) flows both pace through it, so the two stages share
// one shaping path and one fast path for unlimited flows.
type Meter struct {
	Bucket *Bucket
	served atomic.Int64 // bytes moved, cumulative
	waitNs atomic.Int64 // time streams waited for tokens, cumulative
}

// NewMeter returns a meter over a new bucket of rate bytes/s whose largest
// single take is chunk.
func NewMeter(rate float64, chunk int64, now func() time.Time) *Meter {
	return &Meter{Bucket: NewBucketClock(rate, chunk, now)}
}

// Served is the bytes moved so far.
func (m *Meter) Served() int64 { return m.served.Load() }

// Waited is the time streams have waited for tokens so far, summed over
// streams.
func (m *Meter) Waited() time.Duration { return time.Duration(m.waitNs.Load()) }

// Pay waits until n bytes are paid for at the flow's rate, then counts
// them. An unlimited flow pays nothing and reads no clock.
func (m *Meter) Pay(ctx context.Context, n int64) error {
	if n <= 0 {
		return nil
	}
	if m.Bucket.unlimited.Load() {
		m.served.Add(n)
		return nil
	}
	t0 := time.Now()
	err := m.Bucket.WaitN(ctx, n)
	m.waitNs.Add(int64(time.Since(t0)))
	if err == nil {
		m.served.Add(n)
	}
	return err
}

// Reader shapes r: each read (at most chunk bytes) is paid for before it
// is returned.
func (m *Meter) Reader(ctx context.Context, r io.Reader, chunk int) io.Reader {
	return &meterReader{m: m, ctx: ctx, r: r, chunk: chunk}
}

// Writer shapes w: each write is paid for, chunk bytes at a time, before
// it is passed on. The writer keeps w's ReadFrom fast path (sendfile)
// while the flow is unlimited.
func (m *Meter) Writer(ctx context.Context, w io.Writer, chunk int) io.Writer {
	return new(MeterWriter).Init(m, ctx, w, chunk)
}

type meterReader struct {
	m     *Meter
	ctx   context.Context
	r     io.Reader
	chunk int
}

func (r *meterReader) Read(p []byte) (int, error) {
	if len(p) > r.chunk {
		p = p[:r.chunk]
	}
	n, err := r.r.Read(p)
	if n > 0 {
		if werr := r.m.Pay(r.ctx, int64(n)); werr != nil {
			return n, werr
		}
	}
	return n, err
}

// MeterWriter is Meter.Writer's writer as a value, so that an owner that
// lives as long as the writer (a request's stream) holds it and saves an
// allocation per request: Init it, once, and use what Init returns.
type MeterWriter struct {
	m     *Meter
	ctx   context.Context
	w     io.Writer
	chunk int
	lr    io.LimitedReader // ReadFrom's piece, kept here: no allocation per piece
}

// Init makes w shape dst through m, chunk bytes at a time, and returns it.
func (w *MeterWriter) Init(m *Meter, ctx context.Context, dst io.Writer, chunk int) io.Writer {
	*w = MeterWriter{m: m, ctx: ctx, w: dst, chunk: chunk}
	return w
}

func (w *MeterWriter) Write(p []byte) (int, error) {
	var written int
	for len(p) > 0 {
		piece := p[:min(len(p), w.chunk)]
		if err := w.m.Pay(w.ctx, int64(len(piece))); err != nil {
			return written, err
		}
		n, err := w.w.Write(piece)
		written += n
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// readFromPiece is how much an unlimited flow hands to the destination's
// ReadFrom at once: the rate is looked at again after each piece.
const readFromPiece = 4 << 20

// ReadFrom keeps the destination's fast path (sendfile for a file, or a
// file behind one io.LimitedReader) for flows that are not limited, a
// piece at a time, and paces chunk by chunk otherwise.
func (w *MeterWriter) ReadFrom(r io.Reader) (int64, error) {
	rf, ok := w.w.(io.ReaderFrom)
	// net's sendfile sees through one io.LimitedReader and no more: a
	// range GET's file behind a LimitedReader is cut into pieces of the
	// file, not pieces of the LimitedReader, and the caller's limit is
	// charged as they go.
	outer, _ := r.(*io.LimitedReader)
	if outer != nil {
		r = outer.R
	}
	left := func() int64 {
		if outer == nil {
			return readFromPiece
		}
		return min(outer.N, readFromPiece)
	}
	var total int64
	var buf []byte
	for {
		want := left()
		if want <= 0 {
			return total, nil
		}
		var n int64
		var err error
		if ok && w.m.Bucket.unlimited.Load() {
			w.lr = io.LimitedReader{R: r, N: want}
			n, err = rf.ReadFrom(&w.lr)
			w.m.served.Add(n)
		} else {
			if buf == nil {
				buf = make([]byte, w.chunk)
			}
			// One chunk, paced by Write, then the rate is looked at again.
			want = min(want, int64(w.chunk))
			n, err = io.CopyBuffer(struct{ io.Writer }{w}, &io.LimitedReader{R: r, N: want}, buf)
		}
		total += n
		if outer != nil {
			outer.N -= n
		}
		if err != nil || n < want {
			return total, err
		}
	}
}
