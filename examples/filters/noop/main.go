// Command noop is the smallest Facet WebAssembly filter: it copies stdin
// to stdout. Build it with GOOS=wasip1 GOARCH=wasm go build.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	// One large buffer and a plain Read/Write loop: every fd_read and
	// fd_write is a host call, and io.Copy would pick os.File's ReadFrom,
	// which copies through its own 32 KiB buffer.
	buf := make([]byte, 1<<20)
	for {
		n, err := io.ReadFull(os.Stdin, buf)
		if n > 0 {
			if _, werr := os.Stdout.Write(buf[:n]); werr != nil {
				fail(werr)
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return
		}
		if err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "noop:", err)
	os.Exit(1)
}
