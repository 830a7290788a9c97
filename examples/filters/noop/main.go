// Command noop is the smallest Facet WebAssembly filter: it copies stdin
// to stdout. Build it with GOOS=wasip1 GOARCH=wasm go build.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	// A large buffer keeps the number of host calls (fd_read/fd_write) low.
	if _, err := io.CopyBuffer(os.Stdout, os.Stdin, make([]byte, 256<<10)); err != nil {
		fmt.Fprintln(os.Stderr, "noop:", err)
		os.Exit(1)
	}
}
