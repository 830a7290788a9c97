// Package cache owns a gateway's object cache on its local fast disk: the
// store behind the caching filter. It keeps whole objects as clients see
// them (after their reverse filters), serves any byte range of them,
// evicts by LRU or LFU within the size each caching policy grants, keeps
// its index across restarts, and stays coherent across gateways.
//
// Coherence. A cached entry is tagged with the object version it holds
// (its ETag and size, which identify its bytes: see Version). The data plane reads the object's
// metadata from the backend at the start of every GET (it needs it for the
// headers and conditions anyway), and Open serves an entry only when its
// tag equals that metadata. A PUT is acknowledged only once the backend
// has committed it, and the backend's metadata read is read-after-write
// consistent (the embedded fs store; versitygw, Ceph RGW, AWS S3), so a
// GET that starts after any PUT was acknowledged, on any gateway, sees the
// new version's tag and cannot be served the old bytes: a stale entry is
// a miss, and is dropped. This holds whatever happens to the bus, and
// whatever order fills, invalidations and overwrites race in (a fill of
// version 1 committed after version 2 was written is simply never served).
// Invalidations on the bus (Changed) are therefore not what makes the
// cache correct: they free the space of dead entries at once on every
// gateway. The bus's connectivity is tracked and exported so an operator
// sees when invalidations may have been missed; nothing else depends on it.
package cache

import (
	"cmp"
	"container/heap"
	"container/list"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Version identifies the content of one version of an object. Its ETag
// is computed by Facet over the client's bytes (their MD5, or for a
// multipart object the MD5 of its parts' MD5s), so an equal ETag and size
// mean equal bytes, whatever else changed (last-modified, metadata: a
// GET's headers always come from the backend's metadata, never from the
// cache). Modified is informative: a remote backend may report another
// last-modified on HEAD than when the write returned.
type Version struct {
	ETag     string    `json:"etag"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

func (v Version) equal(o Version) bool {
	return v.ETag == o.ETag && v.Size == o.Size
}

// Policy is what one caching policy grants: a byte budget on this node and
// the eviction order within it. Entries admitted under the same Policy
// share the budget.
type Policy struct {
	Size  int64
	Evict string // "lru" or "lfu"
}

func (p Policy) name() string { return fmt.Sprintf("%s-%d", p.Evict, p.Size) }

// Bus is what the store needs of the message bus.
type Bus interface {
	Publish(subject string, data []byte) error
	Subscribe(pattern string, fn func(subject string, data []byte)) (Subscription, error)
}

// Subscription is a live bus subscription.
type Subscription interface{ Unsubscribe() error }

// Subject is where invalidations travel (docs/bus.md).
const Subject = "facet.objcache.invalidate"

// Options configure a Store.
type Options struct {
	// Dir holds the entries; it is created when missing.
	Dir string
	// Node names this gateway in invalidations, so it ignores its own.
	Node string
	// Bus carries invalidations between gateways; nil keeps them local.
	Bus Bus
	// Connected reports whether the bus is reachable now; nil: always.
	Connected func() bool
	Logger    *slog.Logger
}

// Stats are the store's counters since start.
type Stats struct {
	Hits, Misses      uint64
	BytesServed       uint64 // bytes read from cache files by hits
	Admitted          uint64
	AdmitAborted      uint64 // fills abandoned (short read, error, too big)
	Evictions         uint64 // for space
	Stale             uint64 // dropped because the object changed
	Invalidations     uint64 // entries dropped by an invalidation
	Published         uint64 // invalidations published
	PublishErrors     uint64
	Entries           int
	Bytes             int64
	BusConnected      bool
	BusOutages        uint64 // transitions from connected to disconnected
	LastBusOutageEnds time.Time
}

// Store is the node's object cache. It is safe for concurrent use.
type Store struct {
	dir, tmp string
	node     string
	bus      Bus
	conn     func() bool
	log      *slog.Logger
	now      func() time.Time

	mu      sync.Mutex
	closed  bool
	entries map[string]*entry // by objKey
	parts   map[string]*partition

	removeq chan string // data files to unlink, off the request path
	sub     Subscription
	stop    context.CancelFunc
	wg      sync.WaitGroup

	hits, misses, served, admitted, aborted, evicted, stale, invalidated atomic.Uint64
	published, pubErrs, outages                                          atomic.Uint64
	busUp                                                                atomic.Bool
	lastOutage                                                           atomic.Int64
}

type entry struct {
	ID      string  `json:"id"`
	Bucket  string  `json:"bucket"`
	Key     string  `json:"key"`
	Ver     Version `json:"ver"`
	Part    string  `json:"part"`
	PSize   int64   `json:"psize"`
	PEvict  string  `json:"pevict"`
	Hits    uint64  `json:"hits"`
	LastUse int64   `json:"last"`
	// CRC is the CRC-32C of the data file. Entries are written without
	// fsync (a fill must not slow the request that made it); an entry
	// loaded at start is checked against its CRC on its first hit, so a
	// file torn by a crash is dropped, never served.
	CRC uint32 `json:"crc"`

	verified bool
	elem     *list.Element // lru
	hidx     int           // lfu heap index
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func objKey(bucket, key string) string { return bucket + "\x00" + key }

// Open opens the store in opts.Dir, loading the entries a previous run
// left, and starts its background work (file removal, bus subscription,
// connectivity tracking) until Close.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Dir == "" {
		return nil, errors.New("cache: no directory")
	}
	s := &Store{
		dir: filepath.Join(opts.Dir, "entries"), tmp: filepath.Join(opts.Dir, "tmp"),
		node: opts.Node, bus: opts.Bus, conn: opts.Connected, log: opts.Logger, now: time.Now,
		entries: map[string]*entry{}, parts: map[string]*partition{}, removeq: make(chan string, 4096),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.conn == nil {
		s.conn = func() bool { return true }
	}
	for _, d := range []string{s.dir, s.tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("cache: %w", err)
		}
	}
	// Fills in progress when the last run stopped are garbage.
	if tmps, err := os.ReadDir(s.tmp); err == nil {
		for _, t := range tmps {
			_ = os.Remove(filepath.Join(s.tmp, t.Name()))
		}
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	ctx, s.stop = context.WithCancel(ctx)
	s.busUp.Store(s.conn())
	if s.bus != nil {
		sub, err := s.bus.Subscribe(Subject, s.onInvalidation)
		if err != nil {
			s.stop()
			return nil, fmt.Errorf("cache: subscribe %s: %w", Subject, err)
		}
		s.sub = sub
	}
	s.wg.Add(2)
	go s.remover()
	go s.watchBus(ctx)
	return s, nil
}

// Close stops background work and records the index's use counts, so a
// restart keeps the eviction order. Entries stay on disk.
func (s *Store) Close() error {
	if s.sub != nil {
		_ = s.sub.Unsubscribe()
	}
	s.stop()
	s.mu.Lock()
	s.closed = true
	close(s.removeq)
	s.mu.Unlock()
	s.wg.Wait()
	return s.saveUse()
}

// remover unlinks evicted files: eviction updates the index at once (the
// space is accounted free and the entry unreachable), and the unlink,
// whose time depends on the file system, never runs on a request.
func (s *Store) remover() {
	defer s.wg.Done()
	for id := range s.removeq {
		_ = os.Remove(s.dataPath(id))
		_ = os.Remove(s.metaPath(id))
	}
}

func (s *Store) dataPath(id string) string { return filepath.Join(s.dir, id+".data") }
func (s *Store) metaPath(id string) string { return filepath.Join(s.dir, id+".json") }

// discard queues an entry's files for removal; the caller holds s.mu.
func (s *Store) discard(e *entry) {
	if s.closed {
		_ = os.Remove(s.dataPath(e.ID))
		_ = os.Remove(s.metaPath(e.ID))
		return
	}
	select {
	case s.removeq <- e.ID:
	default:
		// The queue is full: remove inline rather than leak the file.
		_ = os.Remove(s.dataPath(e.ID))
		_ = os.Remove(s.metaPath(e.ID))
	}
}

// watchBus samples the bus's connectivity once a second.
func (s *Store) watchBus(ctx context.Context) {
	defer s.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.sweepIdle(idlePartition, sweepBatch)
		up := s.conn()
		was := s.busUp.Swap(up)
		switch {
		case was && !up:
			s.outages.Add(1)
			s.log.Warn("cache: bus unreachable; invalidations from other gateways may be missed (hits are still checked against the backend's metadata)")
		case !was && up:
			s.lastOutage.Store(s.now().UnixNano())
			s.log.Info("cache: bus reachable again")
		}
	}
}

// A partition nobody hit or filled for idlePartition belongs to caching
// parameters no policy uses any more (a policy changed its size= or
// policy=): its entries would hold their budget forever, since only an
// admission into the same partition evicts. The sweep, once a second,
// evicts up to sweepBatch of them, so the lock is never held long.
const (
	idlePartition = time.Hour
	sweepBatch    = 1000
)

func (s *Store) sweepIdle(idle time.Duration, batch int) int {
	cut := s.now().Add(-idle).UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for name, p := range s.parts {
		if p.lastUse >= cut {
			continue
		}
		for n < batch {
			v := p.victim()
			if v == nil {
				break
			}
			s.removeLocked(objKey(v.Bucket, v.Key), v)
			s.evicted.Add(1)
			n++
		}
		if p.victim() == nil {
			delete(s.parts, name)
		}
		if n >= batch {
			break
		}
	}
	return n
}

// Stats returns the counters.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	n := len(s.entries)
	var used int64
	for _, p := range s.parts {
		used += p.used
	}
	s.mu.Unlock()
	st := Stats{
		Hits: s.hits.Load(), Misses: s.misses.Load(), BytesServed: s.served.Load(),
		Admitted: s.admitted.Load(), AdmitAborted: s.aborted.Load(), Evictions: s.evicted.Load(),
		Stale: s.stale.Load(), Invalidations: s.invalidated.Load(), Published: s.published.Load(),
		PublishErrors: s.pubErrs.Load(), Entries: n, Bytes: used, BusConnected: s.busUp.Load(),
		BusOutages: s.outages.Load(),
	}
	if ns := s.lastOutage.Load(); ns != 0 {
		st.LastBusOutageEnds = time.Unix(0, ns)
	}
	return st
}

// Open returns bytes [off, off+n) of the cached copy of bucket/key when it
// holds exactly version v, and ok=false otherwise (a miss; an entry of
// another version is dropped).
func (s *Store) Open(bucket, key string, v Version, off, n int64) (rc io.ReadCloser, ok bool) {
	k := objKey(bucket, key)
	s.mu.Lock()
	e := s.entries[k]
	if e == nil {
		s.mu.Unlock()
		s.misses.Add(1)
		return nil, false
	}
	if !e.Ver.equal(v) {
		s.removeLocked(k, e)
		s.mu.Unlock()
		s.stale.Add(1)
		s.misses.Add(1)
		return nil, false
	}
	e.Hits++
	e.LastUse = s.now().UnixNano()
	s.parts[e.Part].touch(e)
	id, verified, crc := e.ID, e.verified, e.CRC
	s.mu.Unlock()
	if off < 0 || n < 0 || off+n > v.Size {
		s.misses.Add(1)
		return nil, false
	}
	f, err := os.Open(s.dataPath(id))
	if err != nil {
		// Evicted meanwhile (the unlink raced the open): a miss.
		s.misses.Add(1)
		return nil, false
	}
	if !verified {
		if !s.verify(f, crc, v.Size) {
			f.Close()
			s.mu.Lock()
			if cur := s.entries[k]; cur != nil && cur.ID == id {
				s.removeLocked(k, cur)
			}
			s.mu.Unlock()
			s.log.Warn("cache: dropped an entry whose data did not match its CRC (torn by a crash?)", "id", id)
			s.misses.Add(1)
			return nil, false
		}
		s.mu.Lock()
		if cur := s.entries[k]; cur != nil && cur.ID == id {
			cur.verified = true
		}
		s.mu.Unlock()
	}
	s.hits.Add(1)
	return &hitReader{SectionReader: io.NewSectionReader(f, off, n), f: f, off: off, s: s}, true
}

// verify reads f whole and checks its size and CRC.
func (s *Store) verify(f *os.File, crc uint32, size int64) bool {
	h := crc32.New(castagnoli)
	n, err := io.Copy(h, f)
	return err == nil && n == size && h.Sum32() == crc
}

type hitReader struct {
	*io.SectionReader
	f   *os.File
	off int64 // where the section starts in f
	s   *Store
}

func (h *hitReader) Read(p []byte) (int, error) {
	n, err := h.SectionReader.Read(p)
	h.s.served.Add(uint64(n))
	return n, err
}

// WriteTo hands the rest of the section to w as the file itself behind
// one io.LimitedReader, the form net/http's ReadFrom sends with
// sendfile(2): the bytes go from the page cache to the socket without
// being copied through the gateway (the S3 front end's writers keep that
// path while the flow is not shaped). io.Copy and bufio.Reader call it.
func (h *hitReader) WriteTo(w io.Writer) (int64, error) {
	pos, err := h.SectionReader.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, err
	}
	left := h.SectionReader.Size() - pos
	if left <= 0 {
		return 0, nil
	}
	if _, err := h.f.Seek(h.off+pos, io.SeekStart); err != nil {
		return 0, err
	}
	n, err := io.Copy(w, &io.LimitedReader{R: h.f, N: left})
	h.s.served.Add(uint64(n))
	if _, serr := h.SectionReader.Seek(pos+n, io.SeekStart); err == nil {
		err = serr
	}
	return n, err
}

func (h *hitReader) Close() error { return h.f.Close() }

// Holds reports whether any version of bucket/key is cached, without
// counting a hit or a miss: when none is, a GET cannot hit.
func (s *Store) Holds(bucket, key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entries[objKey(bucket, key)] != nil
}

// Contains reports whether bucket/key is cached as version v, without
// counting a hit or a miss.
func (s *Store) Contains(bucket, key string, v Version) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[objKey(bucket, key)]
	return e != nil && e.Ver.equal(v)
}

// removeLocked drops an entry; the caller holds s.mu.
func (s *Store) removeLocked(k string, e *entry) {
	delete(s.entries, k)
	if p := s.parts[e.Part]; p != nil {
		p.remove(e)
	}
	s.discard(e)
}

// Changed drops the local entry of bucket/key and tells the other
// gateways to drop theirs. The data plane calls it after every change
// to an object (PUT, copy, multipart completion, DELETE, metadata
// replacement, restore from the recycle bin), before answering.
func (s *Store) Changed(bucket, key string) {
	s.drop(bucket, key)
	if s.bus == nil {
		return
	}
	if err := Publish(s.bus, s.node, bucket, key); err != nil {
		s.pubErrs.Add(1)
		return
	}
	s.published.Add(1)
}

// Publish tells every gateway's cache that bucket/key changed. A gateway
// without a cache of its own publishes too, for the others'.
func Publish(b Bus, node, bucket, key string) error {
	msg, err := json.Marshal(invalidation{V: 1, Node: node, Bucket: bucket, Key: key})
	if err != nil {
		return err
	}
	return b.Publish(Subject, msg)
}

// invalidation is the message on Subject.
type invalidation struct {
	V      int    `json:"v"`
	Node   string `json:"node"`
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
}

func (s *Store) onInvalidation(_ string, data []byte) {
	var m invalidation
	if err := json.Unmarshal(data, &m); err != nil || m.V != 1 || m.Bucket == "" {
		return
	}
	if m.Node == s.node && s.node != "" {
		return
	}
	s.drop(m.Bucket, m.Key)
}

func (s *Store) drop(bucket, key string) {
	k := objKey(bucket, key)
	s.mu.Lock()
	if e := s.entries[k]; e != nil {
		s.removeLocked(k, e)
		s.invalidated.Add(1)
	}
	s.mu.Unlock()
}

// Fill is an admission in progress. The object's bytes are copied as they
// stream to (GET) or from (PUT) the client and written to a temporary file
// by a goroutine of the fill: a fill never makes its request wait for the
// cache disk. The first fillHold bytes are only held in memory, so an
// object up to that size reaches the disk after its request is answered
// (Commit); a larger one streams to the disk as it goes, and when the disk
// falls more than fillQueue bytes behind, the fill gives up (the object is
// simply not cached). Commit makes it an entry; Abort discards it. Write
// is called from one goroutine; Commit or Abort, once, after the last
// Write.
type Fill struct {
	s      *Store
	pol    Policy
	bucket string
	key    string
	size   int64
	n      int64 // bytes handed to Write
	failed bool
	cur    *[]byte   // the chunk being gathered
	held   []*[]byte // chunks not handed to the writer yet
	busy   bool      // the writer goroutine runs

	ch     chan *[]byte
	queued atomic.Int64
	done   chan struct{}
	// Set by the writer goroutine, read after done is closed.
	f    *os.File
	crc  hash.Hash32
	werr error

	settled bool
}

// fillQueue bounds the bytes a fill may hold in memory ahead of its disk;
// fillHold is what it holds before it starts writing; fillChunk is the
// size of the chunks it writes.
const (
	fillQueue = 4 << 20
	fillHold  = 2 << 20
	fillChunk = 64 << 10
)

var chunkPool = sync.Pool{New: func() any { b := make([]byte, 0, fillChunk); return &b }}

// Admit starts a fill of bucket/key, an object of size bytes, under pol.
// It returns nil when the object cannot fit the policy's budget.
func (s *Store) Admit(pol Policy, bucket, key string, size int64) *Fill {
	if size < 0 || size > pol.Size || pol.Size <= 0 {
		return nil
	}
	return &Fill{s: s, pol: pol, bucket: bucket, key: key, size: size, ch: make(chan *[]byte, fillQueue/fillChunk), done: make(chan struct{})}
}

// start runs the writer and hands it the held chunks (the channel has room
// for fillQueue bytes of chunks, so this never blocks).
func (w *Fill) start() {
	if w.busy {
		return
	}
	w.busy = true
	go w.write()
	for _, bp := range w.held {
		w.ch <- bp
	}
	w.held = nil
}

func (w *Fill) write() {
	defer close(w.done)
	w.crc = crc32.New(castagnoli)
	w.f, w.werr = os.CreateTemp(w.s.tmp, "fill-*")
	for bp := range w.ch {
		b := *bp
		if w.werr == nil {
			_, w.werr = w.f.Write(b)
			w.crc.Write(b)
		}
		w.queued.Add(-int64(len(b)))
		*bp = b[:0]
		chunkPool.Put(bp)
	}
	if w.f != nil {
		if err := w.f.Close(); w.werr == nil {
			w.werr = err
		}
	}
}

// Write copies p into the fill. Small writes are gathered into chunks of
// fillChunk bytes before they go to the writer. It never fails the
// caller's stream: a fill that cannot keep up or cannot write marks itself
// failed, and Commit then discards it.
func (w *Fill) Write(p []byte) (int, error) {
	if w.failed || w.settled || len(p) == 0 {
		return len(p), nil
	}
	w.n += int64(len(p))
	if w.n > w.size {
		w.failed = true
		return len(p), nil
	}
	for rest := p; len(rest) > 0 && !w.failed; {
		if w.cur == nil {
			w.cur = chunkPool.Get().(*[]byte)
		}
		k := min(len(rest), fillChunk-len(*w.cur))
		*w.cur = append(*w.cur, rest[:k]...)
		rest = rest[k:]
		if len(*w.cur) == fillChunk {
			w.send()
		}
	}
	return len(p), nil
}

// send hands the current chunk to the writer, or gives the fill up when
// the writer is fillQueue bytes behind: a fill never blocks its request.
func (w *Fill) send() {
	bp := w.cur
	w.cur = nil
	n := int64(len(*bp))
	if w.queued.Load()+n > fillQueue {
		w.drop(bp)
		return
	}
	w.queued.Add(n)
	if !w.busy && w.queued.Load() <= fillHold {
		w.held = append(w.held, bp)
		return
	}
	w.start()
	select {
	case w.ch <- bp:
	default:
		w.queued.Add(-n)
		w.drop(bp)
	}
}

func (w *Fill) drop(bp *[]byte) {
	*bp = (*bp)[:0]
	chunkPool.Put(bp)
	w.failed = true
}

// finish sends what is gathered, stops the writer and waits for it.
func (w *Fill) finish() {
	if w.cur != nil {
		if w.failed {
			w.drop(w.cur)
			w.cur = nil
		} else {
			w.send()
		}
	}
	if w.failed {
		for _, bp := range w.held {
			*bp = (*bp)[:0]
			chunkPool.Put(bp)
		}
		w.held = nil
	}
	w.start()
	close(w.ch)
	<-w.done
}

func (w *Fill) discard() {
	if w.f != nil {
		_ = os.Remove(w.f.Name())
	}
}

// Abort discards the fill.
func (w *Fill) Abort() {
	if w.settled {
		return
	}
	w.settled = true
	w.finish()
	w.discard()
	w.s.aborted.Add(1)
}

// Commit makes the fill the entry of bucket/key for version v, once all
// of its v.Size bytes reached the disk.
func (w *Fill) Commit(v Version) error {
	if w.settled {
		return errors.New("cache: fill already settled")
	}
	w.settled = true
	w.finish()
	s := w.s
	fail := func(err error) error {
		w.discard()
		s.aborted.Add(1)
		return err
	}
	if w.failed || w.n != w.size || v.Size != w.size {
		return fail(fmt.Errorf("cache: fill of %q/%q holds %d bytes, want %d", w.bucket, w.key, w.n, v.Size))
	}
	if w.werr != nil {
		return fail(fmt.Errorf("cache: fill: %w", w.werr))
	}
	id, err := newID()
	if err != nil {
		return fail(err)
	}
	e := &entry{ID: id, Bucket: w.bucket, Key: w.key, Ver: v, Part: w.pol.name(), PSize: w.pol.Size, PEvict: w.pol.Evict,
		Hits: 0, LastUse: s.now().UnixNano(), CRC: w.crc.Sum32(), verified: true}
	err = os.Rename(w.f.Name(), s.dataPath(id))
	if err == nil {
		err = s.writeMeta(e)
	}
	if err != nil {
		_ = os.Remove(s.dataPath(id))
		return fail(fmt.Errorf("cache: commit: %w", err))
	}
	s.mu.Lock()
	s.insertLocked(e)
	s.mu.Unlock()
	s.admitted.Add(1)
	return nil
}

// insertLocked indexes e, replacing the key's previous entry and evicting
// within e's partition until it fits. Each eviction is O(1) (LRU) or
// O(log n) (LFU) under the lock, and its file goes to the remover: the
// time an admission spends evicting is bounded by the number of entries
// its own size displaces. The caller holds s.mu.
func (s *Store) insertLocked(e *entry) {
	k := objKey(e.Bucket, e.Key)
	if old := s.entries[k]; old != nil {
		s.removeLocked(k, old)
	}
	p := s.parts[e.Part]
	if p == nil {
		p = newPartition(e.Part, e.PSize, e.PEvict)
		s.parts[e.Part] = p
	}
	for p.used+e.Ver.Size > p.size {
		v := p.victim()
		if v == nil {
			break
		}
		s.removeLocked(objKey(v.Bucket, v.Key), v)
		s.evicted.Add(1)
	}
	s.entries[k] = e
	p.add(e)
}

func newID() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// writeMeta records e next to its data file (temp, rename), after the
// data file is in place; the CRC it holds catches a data file a crash tore.
func (s *Store) writeMeta(e *entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(s.tmp, "meta-*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), s.metaPath(e.ID))
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// useFile records hits and last use at Close, to restore eviction order.
const useFile = "use.json"

type useRecord struct {
	Hits uint64 `json:"h"`
	Last int64  `json:"l"`
}

func (s *Store) saveUse() error {
	s.mu.Lock()
	use := make(map[string]useRecord, len(s.entries))
	for _, e := range s.entries {
		use[e.ID] = useRecord{Hits: e.Hits, Last: e.LastUse}
	}
	s.mu.Unlock()
	b, err := json.Marshal(use)
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.tmp, useFile)
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("cache: save use: %w", err)
	}
	return os.Rename(tmp, filepath.Join(filepath.Dir(s.dir), useFile))
}

// load rebuilds the index from the sidecars. A sidecar whose data file is
// missing or of the wrong size is dropped with its file; data files
// without a sidecar (a crash between the two renames) are removed.
func (s *Store) load() error {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	var use map[string]useRecord
	usePath := filepath.Join(filepath.Dir(s.dir), useFile)
	if b, err := os.ReadFile(usePath); err == nil {
		_ = json.Unmarshal(b, &use)
	}
	_ = os.Remove(usePath) // stale after this run's first change
	seen := map[string]bool{}
	var loaded []*entry
	for _, d := range ents {
		id, ok := strings.CutSuffix(d.Name(), ".json")
		if !ok {
			continue
		}
		e, err := s.readMeta(id)
		if err != nil {
			s.log.Warn("cache: dropping unreadable entry", "id", id, "err", err)
			_ = os.Remove(s.metaPath(id))
			_ = os.Remove(s.dataPath(id))
			continue
		}
		if u, ok := use[id]; ok {
			e.Hits, e.LastUse = u.Hits, u.Last
		}
		seen[id] = true
		loaded = append(loaded, e)
	}
	for _, d := range ents {
		if id, ok := strings.CutSuffix(d.Name(), ".data"); ok && !seen[id] {
			_ = os.Remove(filepath.Join(s.dir, d.Name()))
		}
	}
	// Oldest use first, so LRU order comes back as it was.
	sortByUse(loaded)
	for _, e := range loaded {
		s.insertLocked(e)
	}
	// Idleness counts from this start: time the node was down is not the
	// partitions' fault.
	for _, p := range s.parts {
		p.lastUse = s.now().UnixNano()
	}
	if len(loaded) > 0 {
		s.log.Info("cache: loaded entries", "entries", len(s.entries))
	}
	return nil
}

func (s *Store) readMeta(id string) (*entry, error) {
	b, err := os.ReadFile(s.metaPath(id))
	if err != nil {
		return nil, err
	}
	var e entry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, err
	}
	if e.ID != id || e.Bucket == "" || e.Ver.Size < 0 || e.PSize <= 0 || (e.PEvict != "lru" && e.PEvict != "lfu") {
		return nil, errors.New("malformed sidecar")
	}
	e.Part = Policy{Size: e.PSize, Evict: e.PEvict}.name()
	fi, err := os.Stat(s.dataPath(id))
	if err != nil {
		return nil, err
	}
	if fi.Size() != e.Ver.Size {
		return nil, fmt.Errorf("data file holds %d bytes, entry says %d", fi.Size(), e.Ver.Size)
	}
	return &e, nil
}

// partition is one policy's budget and eviction order.
type partition struct {
	name  string
	size  int64
	used  int64
	evict string
	lru   *list.List // front: most recently used
	lfu   lfuHeap
	// lastUse is the last hit or admission in the partition (Unix ns).
	lastUse int64
}

func newPartition(name string, size int64, evict string) *partition {
	return &partition{name: name, size: size, evict: evict, lru: list.New()}
}

func (p *partition) add(e *entry) {
	p.used += e.Ver.Size
	p.lastUse = max(p.lastUse, e.LastUse)
	if p.evict == "lfu" {
		heap.Push(&p.lfu, e)
		return
	}
	e.elem = p.lru.PushFront(e)
}

func (p *partition) remove(e *entry) {
	p.used -= e.Ver.Size
	if p.evict == "lfu" {
		if e.hidx >= 0 && e.hidx < len(p.lfu) && p.lfu[e.hidx] == e {
			heap.Remove(&p.lfu, e.hidx)
		}
		return
	}
	if e.elem != nil {
		p.lru.Remove(e.elem)
		e.elem = nil
	}
}

func (p *partition) touch(e *entry) {
	if p == nil {
		return
	}
	p.lastUse = max(p.lastUse, e.LastUse)
	if p.evict == "lfu" {
		if e.hidx >= 0 && e.hidx < len(p.lfu) && p.lfu[e.hidx] == e {
			heap.Fix(&p.lfu, e.hidx)
		}
		return
	}
	if e.elem != nil {
		p.lru.MoveToFront(e.elem)
	}
}

func (p *partition) victim() *entry {
	if p.evict == "lfu" {
		if len(p.lfu) == 0 {
			return nil
		}
		return p.lfu[0]
	}
	if b := p.lru.Back(); b != nil {
		return b.Value.(*entry)
	}
	return nil
}

// lfuHeap orders entries by hits, then by last use: the least frequently
// used, and among those the least recently, is at the top.
type lfuHeap []*entry

func (h lfuHeap) Len() int { return len(h) }
func (h lfuHeap) Less(i, j int) bool {
	if h[i].Hits != h[j].Hits {
		return h[i].Hits < h[j].Hits
	}
	return h[i].LastUse < h[j].LastUse
}
func (h lfuHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hidx, h[j].hidx = i, j
}
func (h *lfuHeap) Push(x any) {
	e := x.(*entry)
	e.hidx = len(*h)
	*h = append(*h, e)
}
func (h *lfuHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.hidx = -1
	return e
}

func sortByUse(es []*entry) {
	slices.SortFunc(es, func(a, b *entry) int { return cmp.Compare(a.LastUse, b.LastUse) })
}
