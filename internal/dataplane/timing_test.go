package dataplane

import (
	"bytes"
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/filter"
)

// fakeClock moves only when test code spends "time": every reader and
// writer below advances it by a cost per byte it handles, so what each
// step is credited with can be computed exactly.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) Now() time.Time           { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) spend(n int, perByte int) { c.ns.Add(int64(n * perByte)) }

// stepLog is a StepObserver with the fake clock.
type stepLog struct {
	*fakeClock
	mu     sync.Mutex
	meters map[string]*meterLog
}

type meterLog struct {
	d     time.Duration
	bytes int64
	adds  int
}

func (l *stepLog) Step(name string, stage filter.Stage, method filter.Method) StepMeter {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := string(method) + "/" + string(stage) + "/" + name
	m := l.meters[key]
	if m == nil {
		m = &meterLog{}
		l.meters[key] = m
	}
	return m
}

func (m *meterLog) Add(d time.Duration, n int64) {
	if d < 0 || n < 0 {
		panic("negative step time or bytes")
	}
	m.d += d
	m.bytes += n
	m.adds++
}

func newStepLog() *stepLog { return &stepLog{fakeClock: &fakeClock{}, meters: map[string]*meterLog{}} }

// costReader passes r through, spending perByte on every byte.
type costReader struct {
	r       io.Reader
	c       *fakeClock
	perByte int
}

func (r *costReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.c.spend(n, r.perByte)
	return n, err
}

// costWriterTo also drains through WriteTo, in 1000-byte writes.
type costWriterTo struct{ costReader }

func (r *costWriterTo) WriteTo(w io.Writer) (int64, error) {
	var total int64
	buf := make([]byte, 1000)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// costFilter is a transformer (PUT) and a decoder (GET) costing perByte
// on its output; it doubles its input on PUT so output bytes differ from
// input bytes, and spends setup reading hdr bytes of its source during
// Decode.
type costFilter struct {
	info     *filter.Info
	clock    *fakeClock
	perByte  int
	writeTo  bool
	setupHdr int64
}

func (f *costFilter) Info() *filter.Info { return f.info }

func (f *costFilter) Transform(_ context.Context, _ *filter.Request, in io.Reader) (io.Reader, error) {
	doubled := &doubler{r: in}
	if f.writeTo {
		return &costWriterTo{costReader{r: doubled, c: f.clock, perByte: f.perByte}}, nil
	}
	return &costReader{r: doubled, c: f.clock, perByte: f.perByte}, nil
}

func (f *costFilter) Decode(ctx context.Context, _ *filter.Request, _ filter.Record, src filter.Source) (filter.Source, error) {
	if f.setupHdr > 0 {
		rc, err := src.Open(ctx, 0, f.setupHdr)
		if err != nil {
			return nil, err
		}
		io.Copy(io.Discard, rc)
		rc.Close()
		f.clock.spend(1, 5000) // parsing the header
	}
	return &costSource{src: src, f: f}, nil
}

type doubler struct {
	r    io.Reader
	pend []byte
}

func (d *doubler) Read(p []byte) (int, error) {
	if len(d.pend) == 0 {
		buf := make([]byte, (len(p)+1)/2)
		n, err := d.r.Read(buf)
		if n == 0 {
			return 0, err
		}
		for _, b := range buf[:n] {
			d.pend = append(d.pend, b, b)
		}
	}
	n := copy(p, d.pend)
	d.pend = d.pend[n:]
	return n, nil
}

type costSource struct {
	src filter.Source
	f   *costFilter
}

func (s *costSource) Size() int64 { return s.src.Size() }
func (s *costSource) Open(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	rc, err := s.src.Open(ctx, off, n)
	if err != nil {
		return nil, err
	}
	r := costReader{r: rc, c: s.f.clock, perByte: s.f.perByte}
	if s.f.writeTo {
		return struct {
			io.Reader
			io.WriterTo
			io.Closer
		}{&r, &costWriterTo{r}, rc}, nil
	}
	return struct {
		io.Reader
		io.Closer
	}{&r, rc}, nil
}

// memSource is a stored object whose reads cost perByte (the disk).
type memSource struct {
	data    []byte
	c       *fakeClock
	perByte int
}

func (s *memSource) Size() int64 { return int64(len(s.data)) }
func (s *memSource) Open(_ context.Context, off, n int64) (io.ReadCloser, error) {
	return io.NopCloser(&costReader{r: bytes.NewReader(s.data[off : off+n]), c: s.c, perByte: s.perByte}), nil
}

// costWriter is the backend's disk or the client's connection.
type costWriter struct {
	c       *fakeClock
	perByte int
	buf     bytes.Buffer
}

func (w *costWriter) Write(p []byte) (int, error) {
	w.c.spend(len(p), w.perByte)
	return w.buf.Write(p)
}

func costFilterInfo(name string, clock *fakeClock, perByte int, writeTo bool, setupHdr int64) *filter.Info {
	in := &filter.Info{Name: name, Version: 1, Reversible: true}
	in.Config = func() filter.Provisioner {
		return filter.ProvisionFunc(func(filter.Env) (filter.Filter, error) {
			return &costFilter{info: in, clock: clock, perByte: perByte, writeTo: writeTo, setupHdr: setupHdr}, nil
		})
	}
	return in
}

// Each step is credited with its own time only: not the client's body
// (cost 7/byte), not the destination's writes (cost 11/byte), not the
// steps below or above it; and with the bytes it produced.
func TestPutStepTimes(t *testing.T) {
	for _, drain := range []string{"read", "writeTo"} {
		t.Run(drain, func(t *testing.T) {
			log := newStepLog()
			reg := filter.NewRegistry(
				costFilterInfo("a", log.fakeClock, 3, false, 0),
				costFilterInfo("b", log.fakeClock, 5, drain == "writeTo", 0))
			var p Pipeline
			for i, n := range []string{"a", "b"} {
				in, _ := reg.Lookup(n)
				f, _ := in.New(nil, filter.Env{})
				p.Steps = append(p.Steps, Step{Stage: []filter.Stage{filter.StageGateway, filter.StageStorage}[i], Filter: f})
			}
			src := Timed(fixedPipeline{p}, log).ForPut(&filter.Request{})
			const size = 10_000
			body := &costReader{r: bytes.NewReader(make([]byte, size)), c: log.fakeClock, perByte: 7}
			out, _, err := src.Put(context.Background(), &filter.Request{}, body)
			if err != nil {
				t.Fatal(err)
			}
			dst := &costWriter{c: log.fakeClock, perByte: 11}
			var n int64
			if drain == "read" {
				n, err = io.Copy(dst, struct{ io.Reader }{out})
			} else {
				if _, ok := out.(io.WriterTo); !ok {
					t.Fatal("the top of the chain lost its WriteTo")
				}
				n, err = io.Copy(dst, out)
			}
			if err != nil || n != 4*size {
				t.Fatalf("copied %d, %v", n, err)
			}
			checkMeter(t, log, "PUT/gateway/a", 2*size*3, 2*size)
			checkMeter(t, log, "PUT/storage/b", 4*size*5, 4*size)
			total := time.Duration(size*7 + 2*size*3 + 4*size*5 + 4*size*11)
			if got := log.Now().Sub(time.Unix(0, 0)); got != total {
				t.Fatalf("fake clock at %v, want %v", got, total)
			}
		})
	}
}

// On GET the decoders are timed in the order they are stacked, their set-up
// (a header read in Decode) is theirs, and the stored object's reads and the
// client's writes are left out.
func TestDecodeStepTimes(t *testing.T) {
	log := newStepLog()
	reg := filter.NewRegistry(
		costFilterInfo("a", log.fakeClock, 3, true, 0),
		costFilterInfo("b", log.fakeClock, 5, false, 100))
	d := Decoders{Registry: reg, Observer: log}
	stored := &memSource{data: make([]byte, 10_000), c: log.fakeClock, perByte: 7}
	// Applied a then b on PUT: b is undone first, right over the stored bytes.
	plan := Plan{Records: []filter.Record{{Filter: "a", Version: 1}, {Filter: "b", Version: 1}}}
	src, err := d.Open(context.Background(), &filter.Request{}, plan, stored)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := src.Open(context.Background(), 1000, 5000)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rc.(io.WriterTo); !ok {
		t.Fatal("the top of the chain lost its WriteTo")
	}
	dst := &costWriter{c: log.fakeClock, perByte: 11}
	if n, err := io.Copy(dst, rc); err != nil || n != 5000 {
		t.Fatalf("copied %d, %v", n, err)
	}
	rc.Close()
	checkMeter(t, log, "GET//b", 5000+5000*5, 5000)
	checkMeter(t, log, "GET//a", 5000*3, 5000)
}

func checkMeter(t *testing.T, log *stepLog, key string, wantNS int, wantBytes int64) {
	t.Helper()
	m := log.meters[key]
	if m == nil {
		t.Fatalf("no meter %s; have %v", key, log.meters)
	}
	if m.d != time.Duration(wantNS) || m.bytes != wantBytes {
		t.Errorf("%s: %v and %d bytes, want %v and %d", key, m.d, m.bytes, time.Duration(wantNS), wantBytes)
	}
}

type fixedPipeline struct{ p Pipeline }

func (f fixedPipeline) ForPut(*filter.Request) Pipeline { return f.p }

// Without an observer nothing is wrapped.
func TestUntimedPassesThrough(t *testing.T) {
	reg := testRegistry()
	p := pipelineOf(t, reg, "xa")
	if got := Timed(fixedPipeline{p}, nil).ForPut(nil); got.Observer != nil {
		t.Fatal("nil observer installed")
	}
	if got := Timed(fixedPipeline{}, newStepLog()).ForPut(nil); got.Observer != nil {
		t.Fatal("observer on an empty pipeline")
	}
	var c *stepClock
	r := bytes.NewReader(nil)
	if c.reader(0, r) != io.Reader(r) {
		t.Fatal("nil clock wrapped a reader")
	}
}
