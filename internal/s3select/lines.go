package s3select

import (
	"bytes"
	"io"
)

// bufferFor sizes a reader's first buffer for a stream of n bytes: 1 MiB
// for large streams, less for a short ScanRange (it grows for a long
// record).
func bufferFor(n int64) int {
	return int(min(max(n+4<<10, 4<<10), 1<<20))
}

// maxRecordSize bounds one record: memory stays bounded whatever the
// input (S3 allows 1 MiB; Facet is more generous).
const maxRecordSize = 8 << 20

// lineReader cuts a stream into records at a delimiter, in a buffer that
// is reused: the returned slices are valid until the next call.
type lineReader struct {
	src  io.Reader
	buf  []byte
	r, w int
	base int64 // stream offset of buf[0]
	eof  bool
	err  error

	delim []byte
	crlf  bool // delim is "\n": a preceding '\r' is dropped too
	// quote, when set, makes delimiters inside quotes part of the
	// record (AllowQuotedRecordDelimiter).
	quote, esc byte
	quoted     bool
	// soft is the stream offset of the scan range's last byte (0: none):
	// beyond it reads are small.
	soft int64
}

// newLineReader reads src into buf (its length is the first read's room).
func newLineReader(src io.Reader, delim string, buf []byte) *lineReader {
	return &lineReader{src: src, buf: buf, delim: []byte(delim), crlf: delim == "\n"}
}

func (l *lineReader) fill() error {
	if l.r > 0 {
		copy(l.buf, l.buf[l.r:l.w])
		l.base += int64(l.r)
		l.w -= l.r
		l.r = 0
	}
	if l.w == len(l.buf) {
		if len(l.buf) >= maxRecordSize {
			return newError(CodeOverMaxRecordSize, "a record at offset %d is longer than %d bytes", l.base, maxRecordSize)
		}
		nb := make([]byte, 2*len(l.buf))
		copy(nb, l.buf[:l.w])
		l.buf = nb
	}
	room := l.buf[l.w:]
	if l.soft > 0 && l.base+int64(l.w) >= l.soft && len(room) > 16<<10 {
		// Past the scan range only the last record's end is wanted.
		room = room[:16<<10]
	}
	n, err := l.src.Read(room)
	l.w += n
	if err == io.EOF {
		l.eof = true
		return nil
	}
	return err
}

// find returns the index of the record delimiter in b, or -1.
func (l *lineReader) find(b []byte) int {
	if !l.quoted {
		if len(l.delim) == 1 {
			return bytes.IndexByte(b, l.delim[0])
		}
		return bytes.Index(b, l.delim)
	}
	in := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case in && c == l.esc && l.esc != l.quote:
			i++
		case c == l.quote:
			in = !in
		case !in && c == l.delim[0] && (len(l.delim) == 1 || i+1 < len(b) && b[i+1] == l.delim[1]):
			return i
		}
	}
	return -1
}

// next returns the next record and the stream offset of its first byte;
// io.EOF at the end.
func (l *lineReader) next() ([]byte, int64, error) {
	scanned := 0
	for {
		b := l.buf[l.r+scanned : l.w]
		if !l.quoted {
			// Unquoted search can resume where it stopped.
			if i := l.find(b); i >= 0 {
				end := l.r + scanned + i
				return l.take(end, end+len(l.delim))
			}
			scanned = max(0, l.w-l.r-len(l.delim)+1)
		} else if i := l.find(l.buf[l.r:l.w]); i >= 0 {
			end := l.r + i
			return l.take(end, end+len(l.delim))
		}
		if l.eof {
			if l.r == l.w {
				return nil, 0, io.EOF
			}
			return l.take(l.w, l.w)
		}
		if err := l.fill(); err != nil {
			return nil, 0, err
		}
		scanned = min(scanned, l.w-l.r)
	}
}

func (l *lineReader) take(end, next int) ([]byte, int64, error) {
	line := l.buf[l.r:end]
	start := l.base + int64(l.r)
	l.r = next
	if l.crlf && len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, start, nil
}

// skipPartial positions the reader at the first record that starts in
// the range. The stream was opened len(delim) bytes before the range
// (boundary set) or at the object's start when the range begins closer
// to it than that (boundary unset: no record can start there). If those
// bytes are a delimiter the range starts on a record boundary; otherwise
// the rest of the record they are in belongs to the previous range.
func (l *lineReader) skipPartial(boundary bool) error {
	if boundary {
		for l.w-l.r < len(l.delim) && !l.eof {
			if err := l.fill(); err != nil {
				return err
			}
		}
		if l.w-l.r >= len(l.delim) && bytes.Equal(l.buf[l.r:l.r+len(l.delim)], l.delim) {
			l.r += len(l.delim)
			return nil
		}
	}
	_, _, err := l.next()
	if err == io.EOF {
		return nil
	}
	return err
}
