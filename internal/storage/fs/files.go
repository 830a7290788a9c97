package fs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

const (
	idLen     = 32 // hex digits of a data file id
	tmpSuffix = ".tmp"
)

// newID returns a fresh data file id: 128 random bits, so ids never collide
// and never need coordination between writers.
func newID() string {
	var b [idLen / 2]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// validID reports whether id has the form newID produces. Everything read
// back from the index passes through it before it becomes a path, so even a
// corrupt index cannot point outside the data directory.
func validID(id string) bool {
	if len(id) != idLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (s *Store) dataPath(id string) string {
	return filepath.Join(s.dataDir, id[:2], id)
}

// writeFile creates a durable data file from fill and returns its id and
// size. seal runs once the bytes are on disk and before the file gets its
// final name; an error from fill or seal removes the file. The caller owns
// the returned file: it must index it or remove it.
func (s *Store) writeFile(ctx context.Context, fill func(w io.Writer) (int64, error), seal func() error) (id string, n int64, err error) {
	id = newID()
	final := s.dataPath(id)
	tmp := final + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return "", 0, fmt.Errorf("fs: create data file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close() // may already be closed; a second Close only errs
			_ = os.Remove(tmp)
		}
		// What the health probe reports: a one-byte probe fits on a
		// disk too full for an object.
		if err == nil || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			s.full.Store(err != nil)
		}
	}()
	n, err = fill(f)
	if err != nil {
		return "", 0, err
	}
	if err = ctx.Err(); err != nil {
		return "", 0, err
	}
	if !s.noSync {
		if err = f.Sync(); err != nil {
			return "", 0, fmt.Errorf("fs: sync data file: %w", err)
		}
	}
	if err = f.Close(); err != nil {
		return "", 0, fmt.Errorf("fs: close data file: %w", err)
	}
	if seal != nil {
		if err = seal(); err != nil {
			return "", 0, err
		}
	}
	if err = os.Rename(tmp, final); err != nil {
		return "", 0, fmt.Errorf("fs: rename data file: %w", err)
	}
	if !s.noSync {
		if err = s.syncDir(filepath.Dir(final)); err != nil {
			_ = os.Remove(final)
			return "", 0, err
		}
	}
	return id, n, nil
}

// copyBody copies src to dst through a pooled buffer, checking ctx between
// blocks. It fills the buffer before writing so that a body delivered in
// small reads still reaches the disk in large writes.
func (s *Store) copyBody(ctx context.Context, dst io.Writer, src io.Reader) (int64, error) {
	bp := s.bufs.Get().(*[]byte)
	defer s.bufs.Put(bp)
	buf := *bp
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, rerr := fill(src, buf)
		if n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				return total, fmt.Errorf("fs: write data file: %w", err)
			}
			total += int64(n)
		}
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			return total, fmt.Errorf("fs: read body: %w", rerr)
		}
	}
}

// fill reads into buf until it is full, the reader ends (io.EOF) or fails.
// Unlike io.ReadFull it passes the reader's own errors through unchanged,
// so a truncated body's io.ErrUnexpectedEOF is never mistaken for a short
// last block.
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// openData opens a data file for reading.
func (s *Store) openData(id string) (*os.File, error) {
	if !validID(id) {
		return nil, fmt.Errorf("fs: index holds a malformed file id %q", id)
	}
	return os.Open(s.dataPath(id))
}

// removeData deletes data files that the index no longer references. A
// failure only leaks space until the next Open, so it is logged, not
// returned.
func (s *Store) removeData(ids ...string) {
	for _, id := range ids {
		if id == "" || !validID(id) {
			continue
		}
		if err := os.Remove(s.dataPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Error("fs: remove unreferenced data file", "file", id, "err", err)
		}
	}
}
