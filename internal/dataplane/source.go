package dataplane

import (
	"context"
	"fmt"
	"io"

	"github.com/facet-sds/facet/internal/filter"
)

// Concat presents parts as one stream: a multipart object whose parts
// were each transformed on their own is decoded part by part.
type Concat struct {
	parts []filter.Source
	size  int64
}

// NewConcat returns the concatenation of parts.
func NewConcat(parts []filter.Source) *Concat {
	c := &Concat{parts: parts}
	for _, p := range parts {
		c.size += p.Size()
	}
	return c
}

// Size is the total length.
func (c *Concat) Size() int64 { return c.size }

// Open returns bytes [off, off+n), opening only the parts that overlap.
func (c *Concat) Open(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	if off < 0 || n < 0 || off+n > c.size {
		return nil, fmt.Errorf("range [%d,+%d) outside 0..%d", off, n, c.size)
	}
	return &concatReader{ctx: ctx, c: c, off: off, end: off + n}, nil
}

// concatReader opens each overlapping part lazily, one at a time.
type concatReader struct {
	ctx      context.Context
	c        *Concat
	off, end int64
	cur      io.ReadCloser
	curEnd   int64
}

func (r *concatReader) Read(p []byte) (int, error) {
	for {
		if r.cur != nil {
			n, err := r.cur.Read(p)
			if err == io.EOF {
				r.cur.Close()
				r.cur = nil
				r.off = r.curEnd
				if n > 0 {
					return n, nil
				}
				continue
			}
			return n, err
		}
		if r.off >= r.end {
			return 0, io.EOF
		}
		var base int64
		for _, part := range r.c.parts {
			ps := part.Size()
			if r.off < base+ps {
				local := r.off - base
				n := min(ps-local, r.end-r.off)
				rc, err := part.Open(r.ctx, local, n)
				if err != nil {
					return 0, err
				}
				r.cur, r.curEnd = rc, r.off+n
				break
			}
			base += ps
		}
		if r.cur == nil {
			return 0, fmt.Errorf("offset %d beyond parts", r.off)
		}
	}
}

func (r *concatReader) Close() error {
	if r.cur != nil {
		return r.cur.Close()
	}
	return nil
}

// Slice presents a window [off, off+size) of another source: one part of
// a multipart object's stored stream.
type Slice struct {
	Src      filter.Source
	Off, Len int64
}

// Size is the window's length.
func (s Slice) Size() int64 { return s.Len }

// Open opens a range within the window.
func (s Slice) Open(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	if off < 0 || n < 0 || off+n > s.Len {
		return nil, fmt.Errorf("range [%d,+%d) outside window of %d bytes", off, n, s.Len)
	}
	return s.Src.Open(ctx, s.Off+off, n)
}
