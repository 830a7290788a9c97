package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"
)

// Config configures a Log.
type Config struct {
	// Path is the file written; "-" writes to Stdout (no rotation, no
	// tail).
	Path string
	// MaxSize rotates the file before a line would take it past this
	// many bytes (default 100 MiB).
	MaxSize int64
	// Keep is how many rotated files are kept: PATH.1 (the newest) to
	// PATH.Keep (default 10; 0 keeps none: the file is truncated).
	Keep int
	// Buffer is how many records may wait for the writer (default 8192).
	Buffer int
	// SyncEvery is how often written lines are fsynced (default 1 s).
	SyncEvery time.Duration
	Logger    *slog.Logger
	// Stdout is where "-" writes (default os.Stdout).
	Stdout io.Writer
}

// Defaults of Config.
const (
	DefaultMaxSize = 100 << 20
	DefaultKeep    = 10
	DefaultBuffer  = 8192
)

// Log is an audit log. Record hands a record to the writer goroutine and
// never blocks: when the buffer is full the record is dropped and counted,
// because an audit log that slows or stops requests under load would be
// a denial of service of its own; the drop counter
// (facet_audit_dropped_total) is what an operator alerts on.
//
// Durability: each batch of records the writer drains is written with
// one write(2), so a line is in the kernel within moments of its request
// and survives a crash of the process; lines are fsynced every SyncEvery,
// at each rotation and at Close, so a machine crash loses at most about
// SyncEvery of lines.
type Log struct {
	cfg     Config
	log     *slog.Logger
	ch      chan item
	done    chan struct{}
	metrics *metrics

	// mu guards closed: Record and Flush send on ch under the read
	// lock, Close closes ch under the write lock.
	mu     sync.RWMutex
	closed bool

	// Owned by the writer goroutine.
	f     *os.File
	out   *bufio.Writer
	size  int64
	dirty bool
}

// item is a record, or a flush request answered on ack.
type item struct {
	rec Record
	ack chan error
}

// Open opens (appending) or creates the log and starts its writer.
func Open(cfg Config) (*Log, error) {
	if cfg.Path == "" {
		return nil, errors.New("audit: no path")
	}
	if cfg.MaxSize <= 0 {
		cfg.MaxSize = DefaultMaxSize
	}
	if cfg.Keep < 0 {
		return nil, fmt.Errorf("audit: keep %d: want 0 or more", cfg.Keep)
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = DefaultBuffer
	}
	if cfg.SyncEvery <= 0 {
		cfg.SyncEvery = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	l := &Log{cfg: cfg, log: cfg.Logger, ch: make(chan item, cfg.Buffer), done: make(chan struct{}), metrics: newMetrics()}
	if cfg.Path == "-" {
		l.out = bufio.NewWriterSize(cfg.Stdout, 64<<10)
	} else if err := l.openFile(); err != nil {
		return nil, err
	}
	go l.run()
	return l, nil
}

func (l *Log) openFile() error {
	f, err := os.OpenFile(l.cfg.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit: %w", err)
	}
	l.f, l.size = f, st.Size()
	l.out = bufio.NewWriterSize(f, 64<<10)
	return nil
}

// Record queues r; it never blocks (see Log).
func (l *Log) Record(r Record) {
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	r.Time = r.Time.UTC()
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		l.metrics.dropped.Inc()
		return
	}
	select {
	case l.ch <- item{rec: r}:
		l.metrics.records.WithLabelValues(r.Kind).Inc()
	default:
		l.metrics.dropped.Inc()
	}
}

// Flush waits until every record queued before it is written to the file
// (not fsynced).
func (l *Log) Flush(ctx context.Context) error {
	ack := make(chan error, 1)
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return errors.New("audit: log closed")
	}
	select {
	case l.ch <- item{ack: ack}:
	case <-ctx.Done():
		l.mu.RUnlock()
		return ctx.Err()
	}
	l.mu.RUnlock()
	select {
	case err := <-ack:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close writes what is queued, fsyncs and closes the file. Records after
// Close are dropped and counted.
func (l *Log) Close() error {
	l.mu.Lock()
	first := !l.closed
	if first {
		l.closed = true
		close(l.ch)
	}
	l.mu.Unlock()
	<-l.done
	if first && l.f != nil {
		return l.f.Close()
	}
	return nil
}

func (l *Log) run() {
	defer close(l.done)
	tick := time.NewTicker(l.cfg.SyncEvery)
	defer tick.Stop()
	var line bytes.Buffer
	enc := json.NewEncoder(&line)
	enc.SetEscapeHTML(false)
	for {
		select {
		case it, ok := <-l.ch:
			if !ok {
				l.flush()
				l.sync()
				return
			}
			l.handle(it, enc, &line)
			// Drain what else is queued, then write it in one go.
		drain:
			for {
				select {
				case it, ok := <-l.ch:
					if !ok {
						l.flush()
						l.sync()
						return
					}
					l.handle(it, enc, &line)
				default:
					break drain
				}
			}
			l.flush()
		case <-tick.C:
			l.sync()
		}
	}
}

func (l *Log) handle(it item, enc *json.Encoder, line *bytes.Buffer) {
	if it.ack != nil {
		it.ack <- l.flush()
		return
	}
	line.Reset()
	if err := enc.Encode(it.rec); err != nil {
		l.fail(err)
		return
	}
	if l.f != nil && l.size > 0 && l.size+int64(line.Len()) > l.cfg.MaxSize {
		if err := l.rotate(); err != nil {
			l.fail(err)
			// Keep writing to the old file rather than lose lines.
		}
	}
	n, err := l.out.Write(line.Bytes())
	l.size += int64(n)
	l.dirty = true
	if err != nil {
		l.fail(err)
	}
}

func (l *Log) flush() error {
	if err := l.out.Flush(); err != nil {
		l.fail(err)
		return err
	}
	return nil
}

func (l *Log) sync() {
	if l.f == nil || !l.dirty {
		return
	}
	l.dirty = false
	if err := l.f.Sync(); err != nil {
		l.fail(err)
	}
}

func (l *Log) fail(err error) {
	l.metrics.errors.Inc()
	l.log.Error("audit log write failed", "path", l.cfg.Path, "err", err)
}

// rotate closes the file, shifts PATH.i to PATH.i+1 (dropping what would
// pass Keep), renames PATH to PATH.1 and opens a new PATH.
func (l *Log) rotate() error {
	if err := l.out.Flush(); err != nil {
		return err
	}
	if err := l.f.Sync(); err != nil {
		return err
	}
	if err := l.f.Close(); err != nil {
		return err
	}
	l.dirty = false
	if err := l.shift(); err != nil {
		// Go on writing to PATH, whatever its name now holds.
		if oerr := l.openFile(); oerr != nil {
			return errors.Join(err, oerr)
		}
		return err
	}
	l.metrics.rotations.Inc()
	return l.openFile()
}

// shift renames the files of a rotation.
func (l *Log) shift() error {
	p := l.cfg.Path
	if l.cfg.Keep == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	} else {
		if err := os.Remove(rotated(p, l.cfg.Keep)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		for i := l.cfg.Keep - 1; i >= 1; i-- {
			if err := os.Rename(rotated(p, i), rotated(p, i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		if err := os.Rename(p, rotated(p, 1)); err != nil {
			return err
		}
	}
	return nil
}

func rotated(path string, i int) string { return path + "." + strconv.Itoa(i) }
