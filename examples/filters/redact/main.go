// Command redact is a Facet WebAssembly filter that masks e-mail addresses
// and payment card numbers (13 to 19 digits, optionally grouped by spaces
// or dashes) in text. It streams line by line; a line longer than 64 KiB
// is processed in 64 KiB pieces, so a match straddling a piece boundary is
// missed (documented in docs/filters.md).
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
)

const maxLine = 64 << 10

var (
	email = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`)
	card  = regexp.MustCompile(`\b\d(?:[ -]?\d){12,18}\b`)
)

func main() {
	in := bufio.NewReaderSize(os.Stdin, maxLine)
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	for {
		line, err := in.ReadSlice('\n')
		if len(line) > 0 {
			line = email.ReplaceAll(line, []byte("[email]"))
			line = card.ReplaceAll(line, []byte("[card]"))
			if _, werr := out.Write(line); werr != nil {
				fail(werr)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil && err != bufio.ErrBufferFull {
			fail(err)
		}
	}
	if err := out.Flush(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "redact:", err)
	os.Exit(1)
}
