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
	"unsafe"
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
	// Built by doubling: every loop iteration costs a termination check.
	stream := make([]byte, 0, 2*(bufSize+len(key)))
	stream = append(stream, key...)
	for len(stream) < bufSize+len(key) {
		stream = append(stream, stream...)
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
	// 128 bytes per iteration as sixteen 8-byte words: each loop iteration
	// pays the sandbox's termination check (a call out of the module), and
	// WebAssembly is little-endian, so a word load is one i64.load.
	for ; i+128 <= len(dst); i += 128 {
		d := (*[16]uint64)(unsafe.Pointer(&dst[i]))
		k := (*[16]uint64)(unsafe.Pointer(&ks[i]))
		d[0] ^= k[0]
		d[1] ^= k[1]
		d[2] ^= k[2]
		d[3] ^= k[3]
		d[4] ^= k[4]
		d[5] ^= k[5]
		d[6] ^= k[6]
		d[7] ^= k[7]
		d[8] ^= k[8]
		d[9] ^= k[9]
		d[10] ^= k[10]
		d[11] ^= k[11]
		d[12] ^= k[12]
		d[13] ^= k[13]
		d[14] ^= k[14]
		d[15] ^= k[15]
	}
	for ; i+8 <= len(dst); i += 8 {
		binary.LittleEndian.PutUint64(dst[i:], binary.LittleEndian.Uint64(dst[i:])^binary.LittleEndian.Uint64(ks[i:]))
	}
	for ; i < len(dst); i++ {
		dst[i] ^= ks[i]
	}
}
