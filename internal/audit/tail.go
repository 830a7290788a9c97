package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrNoFile: the log goes to stdout, so there is no file to read back.
var ErrNoFile = errors.New("audit: the audit log goes to stdout; there is no file to tail")

// maxTailBytes bounds what one Tail reads: the last lines of a big file,
// or the part after offset.
const maxTailBytes = 4 << 20

// Tail returns lines of the current file, after flushing what is queued:
// with offset < 0 the last n lines; otherwise the complete lines from byte
// offset on (from 0 when the file is now shorter: it was rotated). Next
// is the offset to ask from next time.
func (l *Log) Tail(ctx context.Context, n int, offset int64) (lines [][]byte, next int64, err error) {
	if l.cfg.Path == "-" {
		return nil, 0, ErrNoFile
	}
	if err := l.Flush(ctx); err != nil {
		return nil, 0, err
	}
	f, err := os.Open(l.cfg.Path)
	if err != nil {
		return nil, 0, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("audit: %w", err)
	}
	size := st.Size()
	from := offset
	if offset < 0 {
		from = max(0, size-maxTailBytes)
	} else if offset > size {
		from = 0
	}
	end := min(size, from+maxTailBytes)
	buf := make([]byte, end-from)
	if _, err := f.ReadAt(buf, from); err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, fmt.Errorf("audit: %w", err)
	}
	// Only complete lines: a partial last one is read next time.
	last := bytes.LastIndexByte(buf, '\n')
	if last < 0 {
		return nil, from, nil
	}
	buf = buf[:last+1]
	next = from + int64(len(buf))
	if offset < 0 && from > 0 {
		// The window may begin inside a line.
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	for _, ln := range bytes.Split(bytes.TrimSuffix(buf, []byte("\n")), []byte("\n")) {
		if len(ln) > 0 {
			lines = append(lines, ln)
		}
	}
	if offset < 0 && n >= 0 && len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines, next, nil
}
