// Package fs owns Facet's embedded filesystem backend: object bytes in
// immutable data files under one directory, and a bbolt index that maps
// (bucket, key) to a data file and its metadata.
//
// Layout of the data directory:
//
//	index.db            bbolt index: buckets, objects, uploads, parts, and the
//	                    format version (format.go)
//	data/<xx>/<id>      immutable data files, <id> is 32 random hex digits
//	                    and <xx> its first two digits
//	data/<xx>/<id>.tmp  a data file being written
//
// Keys never become paths: they live only in the index, so no key (however
// hostile: "../x", "a//b", "./") can name a file outside the directory.
//
// A write goes: temp file, fsync, rename, fsync of the shard directory, then
// the index commit. A data file is never rewritten: an overwrite commits a
// new file and removes the old one afterwards, so a reader that opened the
// old file keeps reading the old bytes (POSIX keeps the unlinked inode alive)
// and nobody sees a mix. A crash at any step leaves at worst a temp file or a
// file no index entry refers to; Open removes both.
package fs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/facet-sds/facet/internal/diskformat"
	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/sysdev"
	bolt "go.etcd.io/bbolt"
)

var _ storage.Backend = (*Store)(nil)

// ErrClosed is returned by writes issued after Close.
var ErrClosed = errors.New("fs: store closed")

// Options configure a Store.
type Options struct {
	// Logger receives cleanup reports and errors that cannot be returned
	// (an old data file that could not be removed). Nil discards them.
	Logger *slog.Logger
	// NoSync skips every fsync, of data files, directories and the index.
	// Acknowledged writes may then be lost on a crash: for benchmarks only.
	NoSync bool
	// LockTimeout bounds the wait for another process holding the index.
	// Zero means 5 seconds.
	LockTimeout time.Duration
	// Streams configures how GETs read data files (stream.go): one OS
	// thread per large stream, or a round-robin pool.
	Streams StreamOptions
	// Devices reads the kernel's view of the block devices; the zero
	// value reads the live /proc and /sys.
	Devices sysdev.Reader
}

const (
	// copyBufSize is per write in flight: 1000 concurrent uploads hold
	// 125 MiB of buffers at this size, and larger writes gain little once
	// the page cache absorbs them.
	copyBufSize = 128 << 10
	// maxBatch bounds how many queued writes share one index commit.
	maxBatch = 256
	shards   = 256
)

// Store is the filesystem backend. It is safe for concurrent use.
type Store struct {
	dir     string
	dataDir string
	db      *bolt.DB
	log     *slog.Logger
	noSync  bool

	bufs sync.Pool
	dev  sysdev.Reader
	io   *streamer

	// full is set when a data file write failed for lack of space, and
	// cleared by the next that succeeds (ProbeWrite reports it).
	full atomic.Bool

	reqs      chan *commitReq
	quit      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error

	// lastStamp is the last version stamp given (versions.go).
	lastStamp atomic.Uint64
}

// Open opens (creating if needed) the store in dir, removes what a crash
// may have left behind, and starts the index committer.
func Open(ctx context.Context, dir string, opts Options) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("fs: data dir %q: %w", dir, err)
	}
	s := &Store{
		dir:     abs,
		dataDir: filepath.Join(abs, "data"),
		log:     opts.Logger,
		noSync:  opts.NoSync,
		reqs:    make(chan *commitReq),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.bufs.New = func() any {
		b := make([]byte, copyBufSize)
		return &b
	}
	if err := s.makeDirs(); err != nil {
		return nil, err
	}
	s.dev = opts.Devices
	if s.io, err = newStreamer(opts.Streams, s.dev, s.dataDir, s.log); err != nil {
		return nil, err
	}
	timeout := opts.LockTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	db, err := bolt.Open(filepath.Join(abs, "index.db"), 0o600, &bolt.Options{
		Timeout:        timeout,
		NoSync:         opts.NoSync,
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("fs: index %s is in use by another process: %w", filepath.Join(abs, "index.db"), err)
		}
		return nil, fmt.Errorf("fs: open index: %w", err)
	}
	s.db = db
	what := "object index " + filepath.Join(abs, "index.db")
	var migrated []diskformat.Step[*bolt.Tx]
	if err := db.Update(func(tx *bolt.Tx) error {
		// The format first: a newer index is refused before anything
		// is created in it.
		var err error
		if migrated, err = checkFormat(tx, what); err != nil {
			return err
		}
		_, err = tx.CreateBucketIfNotExists(rootBucket)
		return err
	}); err != nil {
		_ = db.Close()
		if errors.Is(err, diskformat.ErrTooNew) {
			return nil, fmt.Errorf("fs: %w", err)
		}
		return nil, fmt.Errorf("fs: init index: %w", err)
	}
	for _, line := range diskformat.Describe(migrated) {
		s.log.Info("object index migrated", "store", what, "step", line)
	}
	// The shard directories and the index file must themselves survive a
	// crash before anything is written into them.
	for _, p := range []string{s.dataDir, s.dir} {
		if err := s.syncDir(p); err != nil {
			_ = db.Close()
			return nil, err
		}
	}
	// The parent matters only the first time, and may not be ours to open.
	if err := s.syncDir(filepath.Dir(s.dir)); err != nil {
		s.log.Warn("fs: could not sync the data dir's parent", "err", err)
	}
	if err := s.recover(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	go s.commitLoop()
	return s, nil
}

// makeDirs creates the directory tree.
func (s *Store) makeDirs() error {
	if err := os.MkdirAll(s.dataDir, 0o750); err != nil {
		return fmt.Errorf("fs: create data dir: %w", err)
	}
	for i := range shards {
		if err := os.Mkdir(s.shardDir(i), 0o750); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("fs: create shard dir: %w", err)
		}
	}
	return nil
}

func (s *Store) shardDir(i int) string {
	return filepath.Join(s.dataDir, fmt.Sprintf("%02x", i))
}

func (s *Store) syncDir(p string) error {
	if s.noSync {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("fs: sync dir: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fs: sync dir: %w", err)
	}
	return nil
}

// Close stops accepting writes, waits for the committer and closes the
// index. Readers already returned by GetObject stay valid.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.quit)
		<-s.done
		s.io.close()
		if err := s.db.Close(); err != nil {
			s.closeErr = fmt.Errorf("fs: close index: %w", err)
		}
	})
	return s.closeErr
}

// commitReq is one index mutation waiting for the committer.
type commitReq struct {
	fn  func(tx *bolt.Tx) error
	err chan error
}

// update runs fn in a write transaction and returns once it is durable.
//
// bbolt serialises writers and fsyncs on every commit, so a commit per
// request would cap concurrent PUTs at one fsync each. Instead one
// goroutine commits everything that queued while the previous commit was
// running (group commit): no added latency for a lone writer, one fsync
// for many under load.
//
// fn must do all its checks before it mutates anything and return a
// storage sentinel error for a refusal, so that a refused request does not
// abort the requests sharing its transaction. fn may run more than once and
// must set its results afresh each time.
func (s *Store) update(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &commitReq{fn: fn, err: make(chan error, 1)}
	select {
	case s.reqs <- r:
	case <-s.quit:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	// Once queued the request may commit: the caller must learn the
	// outcome even if ctx ends, or it could delete a file just indexed.
	return <-r.err
}

func (s *Store) commitLoop() {
	defer close(s.done)
	batch := make([]*commitReq, 0, maxBatch)
	for {
		select {
		case r := <-s.reqs:
			batch = append(batch[:0], r)
		case <-s.quit:
			return
		}
	drain:
		for len(batch) < maxBatch {
			select {
			case r := <-s.reqs:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		s.commitBatch(batch)
		clear(batch)
	}
}

func (s *Store) commitBatch(batch []*commitReq) {
	if len(batch) == 1 {
		batch[0].err <- s.db.Update(batch[0].fn)
		return
	}
	errs := make([]error, len(batch))
	err := s.db.Update(func(tx *bolt.Tx) error {
		for i, r := range batch {
			errs[i] = r.fn(tx)
			if errs[i] != nil && !isRefusal(errs[i]) {
				return errs[i]
			}
		}
		return nil
	})
	if err == nil {
		for i, r := range batch {
			r.err <- errs[i]
		}
		return
	}
	// Something failed in a way that may have left the shared transaction
	// half-applied: run each request alone so that only the culprit fails.
	for _, r := range batch {
		r.err <- s.db.Update(r.fn)
	}
}

// isRefusal tells a request refused before it mutated anything from a
// failure of the transaction itself.
func isRefusal(err error) bool {
	for _, e := range []error{
		storage.ErrBucketNotFound, storage.ErrBucketExists, storage.ErrBucketNotEmpty,
		storage.ErrObjectNotFound, storage.ErrUploadNotFound, storage.ErrInvalidPart,
		storage.ErrInvalidPartOrder, storage.ErrNoSuchVersion, storage.ErrInvalidVersion,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
