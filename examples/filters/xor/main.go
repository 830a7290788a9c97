// Command xor is a reversible Facet WebAssembly filter: it XORs each byte
// with the repeating key given in FACET_PARAM_KEY. XOR is its own inverse,
// so the same code runs for direction put and get. It obfuscates; it does
// not encrypt.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	key := []byte(os.Getenv("FACET_PARAM_KEY"))
	if len(key) == 0 {
		fmt.Fprintln(os.Stderr, "xor: parameter key is empty")
		os.Exit(2)
	}
	buf := make([]byte, 256<<10)
	var pos int
	for {
		n, err := os.Stdin.Read(buf)
		for i := range buf[:n] {
			buf[i] ^= key[pos]
			if pos++; pos == len(key) {
				pos = 0
			}
		}
		if n > 0 {
			if _, werr := os.Stdout.Write(buf[:n]); werr != nil {
				fmt.Fprintln(os.Stderr, "xor:", werr)
				os.Exit(1)
			}
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "xor:", err)
			os.Exit(1)
		}
	}
}
