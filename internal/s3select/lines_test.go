package s3select

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestLineReaderSmallReads(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 2000; i++ {
		b.WriteString(strings.Repeat("x", i%13))
		b.WriteString("\n")
	}
	l := newLineReader(iotest.HalfReader(bytes.NewReader([]byte(b.String()))), "\n", make([]byte, 64))
	n := 0
	for {
		line, _, err := l.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(line) != n%13 {
			t.Fatalf("line %d: %q", n, line)
		}
		n++
	}
	if n != 2000 {
		t.Fatalf("%d lines", n)
	}
}
