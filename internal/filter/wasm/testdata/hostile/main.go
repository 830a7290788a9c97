// Command hostile is a misbehaving Facet filter used by the runtime's
// tests. FACET_PARAM_MODE picks the misbehaviour: loop, alloc, flood,
// panic, trap, open, write, socket, exit, env, stderr; dep copies the dependency
// file FACET_PARAM_ARG from /deps to stdout; anything else copies stdin to
// stdout.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"unsafe"
)

var sink [][]byte

func main() {
	switch mode := os.Getenv("FACET_PARAM_MODE"); mode {
	case "loop":
		n := 0
		for {
			n++
		}
	case "alloc":
		// 4 GiB in 64 MiB steps, each touched so it is really committed.
		for i := 0; i < 64; i++ {
			b := make([]byte, 64<<20)
			b[len(b)-1] = 1
			sink = append(sink, b)
		}
	case "fill":
		// Like alloc, but every page is written: the memory is really
		// committed, up to the cap.
		for i := 0; i < 256; i++ {
			b := make([]byte, 16<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = 1
			}
			sink = append(sink, b)
		}
	case "flood":
		in, _ := io.ReadAll(os.Stdin)
		for i := 0; i < 100; i++ {
			if _, err := os.Stdout.Write(in); err != nil {
				fmt.Fprintln(os.Stderr, "flood:", err)
				os.Exit(1)
			}
		}
	case "panic":
		var m map[string]int
		m["boom"]++
	case "open":
		f, err := os.Open("/etc/passwd")
		if err != nil {
			fmt.Fprintln(os.Stderr, "open:", err)
			os.Exit(3)
		}
		io.Copy(os.Stdout, f)
	case "trap":
		// A load far outside linear memory: WebAssembly traps (out of
		// bounds memory access); Go's runtime never sees it.
		var x byte
		fmt.Println(*(*byte)(unsafe.Add(unsafe.Pointer(&x), 3<<30)))
	case "write":
		if err := os.WriteFile("/tmp/facet-hostile", []byte("x"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "write:", err)
			os.Exit(5)
		}
		fmt.Println("wrote a host file")
	case "socket":
		addr := os.Getenv("FACET_PARAM_ARG")
		if addr == "" {
			addr = "127.0.0.1:80"
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "socket:", err)
			os.Exit(4)
		}
		c.Close()
		fmt.Println("connected to", addr)
	case "dep":
		f, err := os.Open("/deps/" + os.Getenv("FACET_PARAM_ARG"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "dep:", err)
			os.Exit(6)
		}
		io.Copy(os.Stdout, f)
	case "exit":
		fmt.Fprintln(os.Stderr, "exiting with 7")
		os.Exit(7)
	case "env":
		fmt.Println(strings.Join(os.Args, " "))
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
	case "stderr":
		for i := 0; i < 100000; i++ {
			fmt.Fprintln(os.Stderr, "noise line", i)
		}
		io.Copy(os.Stdout, os.Stdin)
	default:
		io.Copy(os.Stdout, os.Stdin)
	}
}
