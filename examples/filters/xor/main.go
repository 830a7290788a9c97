// Command xor is a reversible Facet WebAssembly filter: it XORs each byte
// with the repeating key given in FACET_PARAM_KEY. XOR is its own inverse,
// so the same code runs for direction put and get. It obfuscates; it does
// not encrypt.
package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
)

const bufSize = 256 << 10

func main() {
	key := []byte(os.Getenv("FACET_PARAM_KEY"))
	if len(key) == 0 {
		fmt.Fprintln(os.Stderr, "xor: parameter key is empty")
		os.Exit(2)
	}
	// The key repeated to cover a whole buffer from any phase, so the hot
	// loop is a plain XOR of two slices, eight bytes at a time: per-byte
	// modulo arithmetic is several times slower in WebAssembly.
	stream := make([]byte, 0, bufSize+len(key))
	for len(stream) < bufSize+len(key) {
		stream = append(stream, key...)
	}
	buf := make([]byte, bufSize)
	var phase int
	for {
		n, err := io.ReadFull(os.Stdin, buf)
		xor(buf[:n], stream[phase:phase+n])
		phase = (phase + n) % len(key)
		if n > 0 {
			if _, werr := os.Stdout.Write(buf[:n]); werr != nil {
				fmt.Fprintln(os.Stderr, "xor:", werr)
				os.Exit(1)
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "xor:", err)
			os.Exit(1)
		}
	}
}

func xor(dst, ks []byte) {
	i := 0
	// Unrolled: each loop iteration also pays the sandbox's termination check.
	for ; i+32 <= len(dst); i += 32 {
		d, k := dst[i:i+32:i+32], ks[i:i+32:i+32]
		binary.LittleEndian.PutUint64(d[0:], binary.LittleEndian.Uint64(d[0:])^binary.LittleEndian.Uint64(k[0:]))
		binary.LittleEndian.PutUint64(d[8:], binary.LittleEndian.Uint64(d[8:])^binary.LittleEndian.Uint64(k[8:]))
		binary.LittleEndian.PutUint64(d[16:], binary.LittleEndian.Uint64(d[16:])^binary.LittleEndian.Uint64(k[16:]))
		binary.LittleEndian.PutUint64(d[24:], binary.LittleEndian.Uint64(d[24:])^binary.LittleEndian.Uint64(k[24:]))
	}
	for ; i+8 <= len(dst); i += 8 {
		binary.LittleEndian.PutUint64(dst[i:], binary.LittleEndian.Uint64(dst[i:])^binary.LittleEndian.Uint64(ks[i:]))
	}
	for ; i < len(dst); i++ {
		dst[i] ^= ks[i]
	}
}
