package fs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/sysdev"
)

// How GETs read data files.
//
// Handing the *os.File to net/http (sendfile) leaves the reading to
// whichever thread the runtime picks; a fixed pool of threads that reads
// chunks of all streams round-robin (Swift's model) shows the kernel's I/O
// scheduler one "process" interleaving every stream, so it can neither keep
// a stream's reads together on a disk nor apply per-stream priorities
// (seeds/003). Here a large stream gets its own OS thread, locked for the
// stream's life, that reads its chunks ahead into a bounded buffer: the
// kernel sees one stream per thread, and ioprio_set on that thread
// prioritises exactly that stream. Small objects (under LargeChunks chunks)
// would pay a thread per GET for little gain; they are read as before, by
// the request's goroutine on the Go runtime's pool of threads (sendfile).
// IOPool keeps the round-robin pool for every stream, for comparison.

// IOModel selects how data files are read for GETs.
type IOModel string

const (
	// IOPerStream serves each large stream from its own OS thread.
	IOPerStream IOModel = "per-stream"
	// IOPool serves every stream from a fixed pool of threads that
	// dispatch chunks round-robin across streams.
	IOPool IOModel = "pool"
)

// ParseIOModel checks a --io-model value; "" means IOPerStream.
func ParseIOModel(s string) (IOModel, error) {
	switch IOModel(s) {
	case "", IOPerStream:
		return IOPerStream, nil
	case IOPool:
		return IOPool, nil
	}
	return "", fmt.Errorf("io model %q: want %q or %q", s, IOPerStream, IOPool)
}

// StreamOptions configure the GET path; zero values mean the defaults.
type StreamOptions struct {
	Model IOModel
	// ChunkSize is the unit of a large stream's reads (default 1 MiB:
	// each chunk costs a thread handoff, and smaller chunks made the
	// per-stream model CPU-bound on a busy 2-core machine). Small objects
	// are read in SmallChunk units.
	ChunkSize int
	// SmallChunk is the unit of a small object's reads (default 128 KiB,
	// so that many concurrent small GETs hold little memory).
	SmallChunk int
	// ReadAhead is how many chunks a stream may hold read but not yet
	// sent (default 4): the bound on a stream's memory.
	ReadAhead int
	// PoolThreads is the size of the round-robin pool (default 8).
	PoolThreads int
	// LargeChunks is the size, in chunks, from which a stream is large
	// (default 10).
	LargeChunks int
	// Priorities drives ioprio_set on per-stream threads.
	Priorities Priorities
}

const (
	defaultChunk       = 1 << 20
	defaultSmallChunk  = 128 << 10
	defaultReadAhead   = 4
	defaultPoolThreads = 8
	defaultLargeChunks = 10
)

// chunk is one read: a pooled buffer holding n bytes, or the read's error.
type chunk struct {
	buf *[]byte
	n   int
	err error
}

// streamer owns the GET path's threads and buffers.
type streamer struct {
	opts  StreamOptions
	log   *slog.Logger
	bufs  sync.Pool // ChunkSize buffers
	small sync.Pool // SmallChunk buffers
	pool  *chunkPool
	prio  *prioritizer
	large int64
	// threads are the per-stream threads alive now (*threadStream ->
	// *threadInfo), for the bandwidth views (Store.Streams).
	threads sync.Map
	// onChunk, set by tests only, sees the thread id and offset of every
	// chunk read.
	onChunk func(f *os.File, tid int, off int64)
}

func newStreamer(o StreamOptions, dev sysdev.Reader, dataDir string, log *slog.Logger) (*streamer, error) {
	m, err := ParseIOModel(string(o.Model))
	if err != nil {
		return nil, fmt.Errorf("fs: %w", err)
	}
	o.Model = m
	if o.ChunkSize <= 0 {
		o.ChunkSize = defaultChunk
	}
	if o.SmallChunk <= 0 {
		o.SmallChunk = min(defaultSmallChunk, o.ChunkSize)
	}
	if o.ReadAhead <= 0 {
		o.ReadAhead = defaultReadAhead
	}
	if o.PoolThreads <= 0 {
		o.PoolThreads = defaultPoolThreads
	}
	if o.LargeChunks <= 0 {
		o.LargeChunks = defaultLargeChunks
	}
	st := &streamer{opts: o, log: log, large: int64(o.ChunkSize) * int64(o.LargeChunks)}
	st.bufs.New = func() any {
		b := make([]byte, o.ChunkSize)
		return &b
	}
	st.small.New = func() any {
		b := make([]byte, o.SmallChunk)
		return &b
	}
	st.prio = newPrioritizer(o.Priorities, dev, dataDir, log)
	st.pool = newChunkPool(st, o.PoolThreads)
	return st, nil
}

// close lets the pool's threads end once the streams they serve are done;
// readers already returned stay valid.
func (st *streamer) close() { st.pool.shutdown() }

// open returns a reader of length bytes from start of f, a file of size
// bytes; it owns f.
func (st *streamer) open(ctx context.Context, f *os.File, start, length, size int64) io.ReadCloser {
	if length >= st.large {
		// A large stream is read front to back: let the kernel read
		// further ahead (twice its default window), in both models.
		const fadvSequential = 2
		_, _, _ = syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), uintptr(start), uintptr(length), fadvSequential, 0, 0)
	}
	// A small object read directly has no thread to prioritise: its flow
	// is not looked up (on every small GET, that was a policy lookup).
	switch {
	case st.opts.Model == IOPool:
		return &streamReader{src: st.pool.add(f, start, length, st.prio.flowOf(ctx))}
	case length >= st.large:
		return &streamReader{src: st.thread(ctx, f, start, length, st.prio.flowOf(ctx))}
	}
	return direct(f, start, length, size)
}

// direct serves a small object the way it was served before threads per
// stream: from the request's goroutine, on the Go runtime's pool of
// threads, with the bare *os.File so that net/http can use sendfile. A
// handoff to a reading thread per chunk cost ~10 % on 4 KiB GETs for
// nothing a small object needs.
func direct(f *os.File, start, length, size int64) io.ReadCloser {
	if start == 0 && length == size {
		return f
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		_ = f.Close()
		return errReader{fmt.Errorf("fs: seek data file: %w", err)}
	}
	return &rangeReader{r: io.LimitedReader{R: f, N: length}, f: f}
}

type rangeReader struct {
	r io.LimitedReader
	f *os.File
}

func (r *rangeReader) Read(p []byte) (int, error) { return r.r.Read(p) }

// WriteTo hands the *io.LimitedReader over an *os.File to the destination,
// which is the shape net/http needs to use sendfile for a range.
func (r *rangeReader) WriteTo(w io.Writer) (int64, error) { return io.Copy(w, &r.r) }

func (r *rangeReader) Close() error { return r.f.Close() }

// errReader fails every read.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
func (r errReader) Close() error             { return nil }

// getBuf returns a pooled buffer of at least n bytes (n is at most the
// chunk size).
func (st *streamer) getBuf(n int64) *[]byte {
	if n <= int64(st.opts.SmallChunk) {
		return st.small.Get().(*[]byte)
	}
	return st.bufs.Get().(*[]byte)
}

func (st *streamer) putBuf(b *[]byte) {
	if len(*b) == st.opts.ChunkSize {
		st.bufs.Put(b)
	} else {
		st.small.Put(b)
	}
}

// chunkSource yields a stream's chunks in order; io.EOF ends it.
type chunkSource interface {
	next() (chunk, error)
	release(c chunk)
	close() error
}

// streamReader turns chunks into an io.Reader; WriteTo hands chunk buffers
// to the writer without a copy.
type streamReader struct {
	src    chunkSource
	cur    chunk
	pos    int
	err    error
	closed bool
}

func (r *streamReader) fill() error {
	if r.pos < r.cur.n {
		return nil
	}
	if r.cur.buf != nil {
		r.src.release(r.cur)
		r.cur = chunk{}
	}
	if r.err != nil {
		return r.err
	}
	c, err := r.src.next()
	if err != nil {
		r.err = err
		return err
	}
	r.cur, r.pos = c, 0
	return nil
}

func (r *streamReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for r.pos >= r.cur.n {
		if err := r.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, (*r.cur.buf)[r.pos:r.cur.n])
	r.pos += n
	return n, nil
}

func (r *streamReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if err := r.fill(); err != nil {
			if err == io.EOF {
				return total, nil
			}
			return total, err
		}
		n, err := w.Write((*r.cur.buf)[r.pos:r.cur.n])
		r.pos += n
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
}

func (r *streamReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.cur.buf != nil {
		r.src.release(r.cur)
		r.cur = chunk{}
	}
	return r.src.close()
}

// threadStream is a stream read by its own OS thread.
type threadStream struct {
	st   *streamer
	ch   chan chunk
	stop chan struct{}
	once sync.Once
	done chan struct{}
}

// threadInfo is what the bandwidth views show of a per-stream thread.
type threadInfo struct {
	tid   atomic.Int64 // 0 until the thread runs
	flow  *flowMeter   // nil when priorities do not apply to the stream
	bytes atomic.Int64 // read so far
	since time.Time
}

func (st *streamer) thread(ctx context.Context, f *os.File, start, length int64, flow *flowMeter) *threadStream {
	t := &threadStream{st: st, ch: make(chan chunk, st.opts.ReadAhead), stop: make(chan struct{}), done: make(chan struct{})}
	info := &threadInfo{flow: flow, since: time.Now()}
	st.threads.Store(t, info)
	go t.run(ctx, f, start, start+length, flow, info)
	return t
}

// streams lists the per-stream threads alive now.
func (st *streamer) streams() []storage.ThreadStream {
	var out []storage.ThreadStream
	st.threads.Range(func(_, v any) bool {
		i := v.(*threadInfo)
		ts := storage.ThreadStream{TID: int(i.tid.Load()), Bytes: i.bytes.Load(), Since: i.since}
		if i.flow != nil {
			ts.Flow, ts.Need = i.flow.name, math.Float64frombits(i.flow.need.Load())
		}
		out = append(out, ts)
		return true
	})
	slices.SortFunc(out, func(a, b storage.ThreadStream) int { return a.Since.Compare(b.Since) })
	return out
}

func (t *threadStream) run(ctx context.Context, f *os.File, off, end int64, flow *flowMeter, info *threadInfo) {
	// The thread stays this stream's for its whole life: that is what
	// lets the kernel tell streams apart.
	runtime.LockOSThread()
	tid := syscall.Gettid()
	info.tid.Store(int64(tid))
	applied := ioprio{}
	defer func() {
		t.st.threads.Delete(t)
		_ = f.Close()
		close(t.ch)
		close(t.done)
		// A thread whose priority was changed exits with its goroutine
		// (Go then discards it) rather than carry the priority to
		// other goroutines.
		if applied == (ioprio{}) {
			runtime.UnlockOSThread()
		}
	}()
	size := int64(t.st.opts.ChunkSize)
	for off < end {
		if want := t.st.prio.want(flow); want != applied {
			if t.st.prio.apply(tid, want) {
				applied = want
			}
		}
		c := t.st.readChunk(f, tid, off, min(size, end-off))
		if c.err == nil {
			flow.add(int64(c.n))
			info.bytes.Add(int64(c.n))
		}
		select {
		case t.ch <- c:
		case <-t.stop:
			if c.buf != nil {
				t.st.putBuf(c.buf)
			}
			return
		case <-ctx.Done():
			if c.buf != nil {
				t.st.putBuf(c.buf)
			}
			select {
			case t.ch <- chunk{err: ctx.Err()}:
			case <-t.stop:
			}
			return
		}
		if c.err != nil {
			return
		}
		off += int64(c.n)
	}
}

// readChunk reads n bytes at off into a pooled buffer. A short read means
// the file is shorter than the index says: data files are immutable, so
// that is corruption, not a race.
func (st *streamer) readChunk(f *os.File, tid int, off, n int64) chunk {
	b := st.getBuf(n)
	got, err := f.ReadAt((*b)[:n], off)
	if st.onChunk != nil {
		st.onChunk(f, tid, off)
	}
	if err == nil || (err == io.EOF && int64(got) == n) {
		return chunk{buf: b, n: got}
	}
	st.putBuf(b)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return chunk{err: fmt.Errorf("fs: read data file at %d: %w", off, err)}
}

func (t *threadStream) next() (chunk, error) {
	c, ok := <-t.ch
	if !ok {
		return chunk{}, io.EOF
	}
	if c.err != nil {
		return chunk{}, c.err
	}
	return c, nil
}

func (t *threadStream) release(c chunk) { t.st.putBuf(c.buf) }

func (t *threadStream) close() error {
	t.once.Do(func() { close(t.stop) })
	for c := range t.ch {
		if c.buf != nil {
			t.st.putBuf(c.buf)
		}
	}
	<-t.done
	return nil
}

// chunkPool is the round-robin model: a fixed set of threads, each taking
// the next chunk of the next stream in turn.
type chunkPool struct {
	st      *streamer
	mu      sync.Mutex
	cond    *sync.Cond
	ring    []*poolStream
	next    int
	closing bool
	wg      sync.WaitGroup
}

// poolStream is one stream served by the pool. Chunk i lands in slot
// i%len(slots); at most len(slots) chunks are out (read, in flight or
// unconsumed), so a slot is always free when its chunk arrives.
type poolStream struct {
	p       *chunkPool
	f       *os.File
	end     int64
	size    int64 // chunk size: small objects read in smaller units
	flow    *flowMeter
	slots   []chan chunk
	nChunks int64
	readIdx int64

	// Guarded by p.mu.
	nextOff int64
	issued  int64
	credits int
	pending int
	closed  bool
	ringed  bool
}

func newChunkPool(st *streamer, threads int) *chunkPool {
	p := &chunkPool{st: st}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(threads)
	for range threads {
		go p.worker()
	}
	return p
}

func (p *chunkPool) add(f *os.File, start, length int64, flow *flowMeter) *poolStream {
	size := int64(p.st.opts.ChunkSize)
	if length < p.st.large {
		size = int64(p.st.opts.SmallChunk)
	}
	s := &poolStream{p: p, f: f, end: start + length, size: size, flow: flow, nextOff: start,
		nChunks: (length + size - 1) / size, credits: p.st.opts.ReadAhead,
		slots: make([]chan chunk, p.st.opts.ReadAhead)}
	for i := range s.slots {
		s.slots[i] = make(chan chunk, 1)
	}
	if s.nChunks == 0 {
		return s
	}
	p.mu.Lock()
	s.ringed = true
	p.ring = append(p.ring, s)
	p.mu.Unlock()
	p.cond.Broadcast()
	return s
}

// take picks the next stream in round-robin order that may read a chunk.
// Called with p.mu held.
func (p *chunkPool) take() (s *poolStream, idx, off, n int64, ok bool) {
	for range len(p.ring) {
		if p.next >= len(p.ring) {
			p.next = 0
		}
		s = p.ring[p.next]
		p.next++
		if s.credits == 0 {
			continue
		}
		idx, off, n = s.issued, s.nextOff, min(s.size, s.end-s.nextOff)
		s.issued++
		s.nextOff += n
		s.credits--
		s.pending++
		if s.nextOff >= s.end {
			p.unring(s)
		}
		return s, idx, off, n, true
	}
	return nil, 0, 0, 0, false
}

// unring removes s from the ring. Called with p.mu held.
func (p *chunkPool) unring(s *poolStream) {
	if !s.ringed {
		return
	}
	s.ringed = false
	for i, x := range p.ring {
		if x == s {
			p.ring = append(p.ring[:i], p.ring[i+1:]...)
			if p.next > i {
				p.next--
			}
			return
		}
	}
}

func (p *chunkPool) worker() {
	defer p.wg.Done()
	// Pool threads are threads too (Swift's are): lock them so that the
	// model compared is the one the paper measured.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := syscall.Gettid()
	p.mu.Lock()
	for {
		s, idx, off, n, ok := p.take()
		if !ok {
			if p.closing && len(p.ring) == 0 {
				p.mu.Unlock()
				return
			}
			p.cond.Wait()
			continue
		}
		p.mu.Unlock()
		c := p.st.readChunk(s.f, tid, off, n)
		if c.err == nil {
			s.flow.add(int64(c.n))
		}
		s.slots[idx%int64(len(s.slots))] <- c
		p.mu.Lock()
		s.pending--
		if s.closed && s.pending == 0 {
			_ = s.f.Close()
		}
	}
}

func (p *chunkPool) shutdown() {
	p.mu.Lock()
	p.closing = true
	p.mu.Unlock()
	p.cond.Broadcast()
}

func (s *poolStream) next() (chunk, error) {
	if s.readIdx >= s.nChunks {
		return chunk{}, io.EOF
	}
	c := <-s.slots[s.readIdx%int64(len(s.slots))]
	s.readIdx++
	if c.err != nil {
		s.giveCredit()
		return chunk{}, c.err
	}
	return c, nil
}

func (s *poolStream) release(c chunk) {
	s.p.st.putBuf(c.buf)
	s.giveCredit()
}

func (s *poolStream) giveCredit() {
	s.p.mu.Lock()
	s.credits++
	s.p.mu.Unlock()
	s.p.cond.Signal()
}

func (s *poolStream) close() error {
	p := s.p
	p.mu.Lock()
	if s.closed {
		p.mu.Unlock()
		return nil
	}
	s.closed = true
	p.unring(s)
	last := s.pending == 0
	p.mu.Unlock()
	for _, sl := range s.slots {
		select {
		case c := <-sl:
			if c.buf != nil {
				p.st.putBuf(c.buf)
			}
		default:
		}
	}
	if last {
		return s.f.Close()
	}
	return nil
}
