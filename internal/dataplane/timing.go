package dataplane

import (
	"context"
	"io"
	"sync/atomic"
	"time"

	"github.com/facet-sds/facet/internal/filter"
)

// StepObserver is told how much time each filter step spends on a
// request's bytes (Prometheus' facet_filter_seconds_total). Step is called
// once per step per request, before any byte flows; the meter it returns
// is then fed from the request's goroutine.
type StepObserver interface {
	Step(filter string, stage filter.Stage, method filter.Method) StepMeter
}

// StepMeter accumulates one step's time and output bytes.
type StepMeter interface {
	Add(d time.Duration, bytes int64)
}

// PipelineSource resolves the pipeline of a PUT; control.Service is one.
type PipelineSource interface {
	ForPut(req *filter.Request) Pipeline
}

// Timed returns src with every non-empty pipeline it resolves timed by
// obs. A nil obs returns src unchanged.
func Timed(src PipelineSource, obs StepObserver) PipelineSource {
	if obs == nil {
		return src
	}
	return timedSource{src: src, obs: obs}
}

type timedSource struct {
	src PipelineSource
	obs StepObserver
}

func (t timedSource) ForPut(req *filter.Request) Pipeline {
	p := t.src.ForPut(req)
	if !p.Empty() {
		p.Observer = t.obs
	}
	return p
}

// How a step's time is measured. Filters are stacked readers: step k reads
// from step k-1 inside its own Read. Every boundary of the chain is wrapped
// and timed; a call through the output of step k credits k with its
// duration and debits the step that made the call (k+1), so each step is
// left with its own time only: not the client's network, not the backend's
// disk, not the other filters. When the top of the chain is drained with
// WriteTo, the time spent in the destination's Write is left out too.
// Reads through the chain are sequential, but a backend may read from a
// goroutine of its own, hence the atomics. The cost is two clock reads per
// boundary per Read call (a few tens of ns on 32 KiB or larger reads) and
// nothing at all for requests without filters.
type stepClock struct {
	now   func() time.Time
	steps []stepState
}

type stepState struct {
	meter   StepMeter
	pending atomic.Int64 // nanoseconds not yet handed to meter; may dip below 0 meanwhile
	bytes   atomic.Int64
}

// clockSource is an optional StepObserver ability: the clock to time steps
// with (time.Now otherwise). Tests use it to make time deterministic.
type clockSource interface {
	Now() time.Time
}

// newStepClock returns a clock for n steps; the caller sets their meters.
func newStepClock(obs StepObserver, n int) *stepClock {
	now := time.Now
	if cs, ok := obs.(clockSource); ok {
		now = cs.Now
	}
	return &stepClock{now: now, steps: make([]stepState, n)}
}

// spent books d (and n output bytes) to step k, which was called by step
// k+1. k is -1 for the chain's input (the client's body, the stored object).
func (c *stepClock) spent(k int, d time.Duration, n int64) {
	if k >= 0 {
		c.steps[k].pending.Add(int64(d))
		c.steps[k].bytes.Add(n)
	}
	if k+1 < len(c.steps) {
		c.steps[k+1].pending.Add(-int64(d))
	}
}

// The methods below are what Put and Open call; a nil clock (no observer)
// passes everything through untimed.

func (c *stepClock) begin() time.Time {
	if c == nil {
		return time.Time{}
	}
	return c.now()
}

// built books the set-up of step k (Encode, Decode: they may read a header
// or an index), which nothing downstream called.
func (c *stepClock) built(k int, start time.Time) {
	if c != nil {
		c.steps[k].pending.Add(int64(c.now().Sub(start)))
	}
}

// reader times r as the output of step k (-1: the chain's input).
func (c *stepClock) reader(k int, r io.Reader) io.Reader {
	if c == nil {
		return r
	}
	return wrapReader(r, c, k, k == len(c.steps)-1)
}

// source is reader for a GET's decoder chain.
func (c *stepClock) source(k int, s filter.Source) filter.Source {
	if c == nil {
		return s
	}
	return &timedFilterSource{src: s, c: c, k: k, top: k == len(c.steps)-1}
}

// done settles what the chain's set-up cost.
func (c *stepClock) done() {
	if c != nil {
		c.flush()
	}
}

// flush hands the settled time to the meters. It runs at the end of each
// call through the top of the chain, when every nested call has returned;
// time a step spent reading ahead outside any call of its consumer (a
// header read during Decode, say) is carried until it is covered.
func (c *stepClock) flush() {
	for k := range c.steps {
		st := &c.steps[k]
		d := st.pending.Swap(0)
		if d < 0 {
			st.pending.Add(d)
			d = 0
		}
		n := st.bytes.Swap(0)
		if d > 0 || n > 0 {
			st.meter.Add(time.Duration(d), n)
		}
	}
}

// timedReader is one boundary of the chain: the output of step k.
type timedReader struct {
	r   io.Reader
	c   *stepClock
	k   int
	top bool
}

// wrapReader times r as the output of step k; the top of the chain also
// keeps r's WriteTo (the compression filter streams through it).
func wrapReader(r io.Reader, c *stepClock, k int, top bool) io.Reader {
	if _, ok := r.(io.WriterTo); ok && top {
		return &timedWriterTo{timedReader: timedReader{r: r, c: c, k: k, top: top}}
	}
	return &timedReader{r: r, c: c, k: k, top: top}
}

func (t *timedReader) Read(p []byte) (int, error) {
	start := t.c.now()
	n, err := t.r.Read(p)
	t.c.spent(t.k, t.c.now().Sub(start), int64(n))
	if t.top {
		t.c.flush()
	}
	return n, err
}

type timedWriterTo struct {
	timedReader
	tw timedWriter // one per reader, not one per WriteTo
}

func (t *timedWriterTo) WriteTo(w io.Writer) (int64, error) {
	tw := &t.tw
	*tw = timedWriter{w: w, t: &t.timedReader, mark: t.c.now()}
	n, err := t.r.(io.WriterTo).WriteTo(tw)
	t.c.spent(t.k, t.c.now().Sub(tw.mark), 0)
	t.c.flush()
	return n, err
}

// timedWriter books the time between the destination's writes to the
// writing step, and not the writes themselves.
type timedWriter struct {
	w    io.Writer
	t    *timedReader
	mark time.Time
}

func (tw *timedWriter) Write(p []byte) (int, error) {
	c := tw.t.c
	c.spent(tw.t.k, c.now().Sub(tw.mark), int64(len(p)))
	c.flush()
	n, err := tw.w.Write(p)
	tw.mark = c.now()
	return n, err
}

// timedFilterSource is a boundary of a GET's decoder chain: the decoded
// view step k produces (k -1: the stored object).
type timedFilterSource struct {
	src filter.Source
	c   *stepClock
	k   int
	top bool
}

func (s *timedFilterSource) Size() int64 { return s.src.Size() }

func (s *timedFilterSource) Open(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	start := s.c.now()
	rc, err := s.src.Open(ctx, off, n)
	s.c.spent(s.k, s.c.now().Sub(start), 0)
	if s.top {
		s.c.flush()
	}
	if err != nil {
		return nil, err
	}
	r := wrapReader(rc, s.c, s.k, s.top)
	if wt, ok := r.(io.WriterTo); ok {
		return struct {
			io.Reader
			io.WriterTo
			io.Closer
		}{r, wt, rc}, nil
	}
	return struct {
		io.Reader
		io.Closer
	}{r, rc}, nil
}

// clock returns the timing of p's steps on a request of method m, or nil
// when p is not observed.
func (p Pipeline) clock(m filter.Method) *stepClock {
	if p.Observer == nil || len(p.Steps) == 0 {
		return nil
	}
	c := newStepClock(p.Observer, len(p.Steps))
	for i, st := range p.Steps {
		c.steps[i].meter = p.Observer.Step(st.Filter.Info().Name, st.Stage, m)
	}
	return c
}

// clock returns the timing of plan's decoders, in the order they are
// stacked (the last filter applied is undone first), or nil when d is not
// observed. Records do not say at which stage their filter ran on PUT: the
// decoders run where the GET is served, and report no stage.
func (d Decoders) clock(plan Plan) *stepClock {
	if d.Observer == nil || len(plan.Records) == 0 {
		return nil
	}
	c := newStepClock(d.Observer, len(plan.Records))
	for i := range plan.Records {
		c.steps[i].meter = d.Observer.Step(plan.Records[len(plan.Records)-1-i].Filter, "", filter.MethodGet)
	}
	return c
}
