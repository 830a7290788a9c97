// Command uppercase is a Facet WebAssembly filter that upper-cases ASCII
// letters. It is ASCII-only on purpose: a multi-byte UTF-8 character may be
// split across two reads, and ASCII bytes never occur inside one, so the
// stream can be transformed chunk by chunk without decoding.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	buf := make([]byte, 256<<10)
	for {
		n, err := os.Stdin.Read(buf)
		for i, c := range buf[:n] {
			if 'a' <= c && c <= 'z' {
				buf[i] = c - ('a' - 'A')
			}
		}
		if n > 0 {
			if _, werr := os.Stdout.Write(buf[:n]); werr != nil {
				fmt.Fprintln(os.Stderr, "uppercase:", werr)
				os.Exit(1)
			}
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "uppercase:", err)
			os.Exit(1)
		}
	}
}
