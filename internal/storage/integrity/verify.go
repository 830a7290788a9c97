package integrity

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
)

// ErrCorrupt reports stored bytes that fail their checksum. A reader that
// returns it has delivered only bytes that passed.
var ErrCorrupt = errors.New("stored bytes fail their checksum")

var blockPool = sync.Pool{New: func() any { b := make([]byte, BlockSize); return &b }}

// verifier reads whole blocks of a stored stream, checks each against
// its sums before handing any of its bytes on, and delivers bytes [off,
// off+n) of the stream. src stands at the start of the block holding off.
type verifier struct {
	src      io.ReadCloser
	sums     *Sums
	pos      int64 // stored offset of the next block src gives
	off, end int64 // what remains to deliver
	buf      *[]byte
	pending  []byte // verified bytes not yet delivered
	err      error
	failed   func(err error)
	what     string // bucket/key, for errors
}

func newVerifier(src io.ReadCloser, sums *Sums, blockStart, off, n int64, what string, failed func(error)) *verifier {
	return &verifier{src: src, sums: sums, pos: blockStart, off: off, end: off + n, what: what, failed: failed}
}

// fill reads and checks the next block; it sets v.pending or v.err.
func (v *verifier) fill() {
	if v.off >= v.end {
		v.err = io.EOF
		return
	}
	start, n, want, ok := v.sums.blockAt(v.pos)
	if !ok || start != v.pos {
		v.err = fmt.Errorf("integrity: %s: offset %d outside its checksums (%d bytes): %w", v.what, v.pos, v.sums.Size(), ErrCorrupt)
		v.fail()
		return
	}
	if v.buf == nil {
		v.buf = blockPool.Get().(*[]byte)
		if int64(len(*v.buf)) < n {
			*v.buf = make([]byte, n)
		}
	}
	b := (*v.buf)[:n]
	if _, err := io.ReadFull(v.src, b); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			// The stored stream is shorter than its checksums say.
			err = fmt.Errorf("integrity: %s: block at %d: stream ends early: %w", v.what, v.pos, ErrCorrupt)
			v.err = err
			v.fail()
			return
		}
		v.err = err
		return
	}
	if got := crc32.Checksum(b, castagnoli); got != want {
		v.err = fmt.Errorf("integrity: %s: block at stored offset %d (%d bytes): crc32c %08x, recorded %08x: %w", v.what, v.pos, n, got, want, ErrCorrupt)
		v.fail()
		return
	}
	lo := v.off - v.pos
	hi := min(n, v.end-v.pos)
	v.pending = b[lo:hi]
	v.pos += n
	v.off = v.pos
}

func (v *verifier) fail() {
	if v.failed != nil {
		v.failed(v.err)
	}
}

func (v *verifier) Read(p []byte) (int, error) {
	for len(v.pending) == 0 {
		if v.err != nil {
			return 0, v.err
		}
		v.fill()
	}
	n := copy(p, v.pending)
	v.pending = v.pending[n:]
	return n, nil
}

// WriteTo hands each verified block to w without another copy.
func (v *verifier) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		for len(v.pending) == 0 {
			if v.err == io.EOF {
				return total, nil
			}
			if v.err != nil {
				return total, v.err
			}
			v.fill()
		}
		n, err := w.Write(v.pending)
		total += int64(n)
		v.pending = v.pending[n:]
		if err != nil {
			return total, err
		}
	}
}

func (v *verifier) Close() error {
	if v.buf != nil {
		v.pending = nil
		blockPool.Put(v.buf)
		v.buf = nil
	}
	if v.err == nil {
		v.err = errors.New("integrity: read after close")
	}
	return v.src.Close()
}
