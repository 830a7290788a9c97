package wasm

import (
	"bytes"
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// initialMemory instantiates code without running it and returns its
// linear memory: what the data segments put there.
func initialMemory(t testing.TB, code []byte) []byte {
	t.Helper()
	return initialMemoryWith(t, code, func(ctx context.Context) context.Context { return ctx })
}

// initialMemoryWith is initialMemory with the instance's memory allocated
// as mem's context says (a memory image).
func initialMemoryWith(t testing.TB, code []byte, mem func(context.Context) context.Context) []byte {
	t.Helper()
	ctx := context.Background()
	// The interpreter: nothing runs, and it compiles a module at once
	// where the optimising compiler takes seconds under -race.
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, code)
	if err != nil {
		t.Fatal(err)
	}
	// The WASI functions are linked, never called: _start does not run.
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		t.Fatal(err)
	}
	m, err := rt.InstantiateModule(mem(ctx), cm, wazero.NewModuleConfig().WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	b, ok := m.Memory().Read(0, m.Memory().Size())
	if !ok {
		t.Fatal("memory unreadable")
	}
	return bytes.Clone(b)
}

func TestCoalesceDataKeepsInitialMemory(t *testing.T) {
	for _, name := range []string{"noop"} {
		t.Run(name, func(t *testing.T) {
			code := moduleBytes(t, name)
			out := coalesceData(code)
			if bytes.Equal(out, code) {
				t.Fatal("a Go module was not coalesced")
			}
			before, after := segmentCount(t, code), segmentCount(t, out)
			t.Logf("%s: %d data segments -> %d, %d -> %d bytes", name, before, after, len(code), len(out))
			if after >= before/100 {
				t.Fatalf("only %d -> %d segments", before, after)
			}
			if !bytes.Equal(initialMemory(t, code), initialMemory(t, out)) {
				t.Fatal("coalescing changed the initial memory")
			}
		})
	}
}

func segmentCount(t testing.TB, code []byte) int {
	t.Helper()
	for i := 8; i < len(code); {
		size, n := uleb(code[i+1:])
		if code[i] == 11 {
			c, _ := uleb(code[i+1+n:])
			return int(c)
		}
		i += 1 + n + int(size)
	}
	t.Fatal("no data section")
	return 0
}

func TestCoalesceDataLeavesOthersAlone(t *testing.T) {
	for _, in := range [][]byte{nil, []byte("\x00asm"), []byte("\x00asm\x01\x00\x00\x00"), []byte("not wasm at all")} {
		if out := coalesceData(in); !bytes.Equal(out, in) {
			t.Errorf("%q changed", in)
		}
	}
	// Two overlapping segments: their order matters, so nothing is merged.
	m := []byte("\x00asm\x01\x00\x00\x00" +
		"\x05\x03\x01\x00\x01" + // memory section: one memory, min 1
		"\x0b\x10\x02" + "\x00\x41\x00\x0b\x03abc" + "\x00\x41\x01\x0b\x02XY")
	if out := coalesceData(m); !bytes.Equal(out, m) {
		t.Errorf("overlapping segments were merged: %x", out)
	}
	// Two close segments are merged, the gap zero-filled.
	m2 := []byte("\x00asm\x01\x00\x00\x00" +
		"\x05\x03\x01\x00\x01" +
		"\x0b\x10\x02" + "\x00\x41\x00\x0b\x03abc" + "\x00\x41\x05\x0b\x02XY")
	out := coalesceData(m2)
	if bytes.Equal(out, m2) {
		t.Fatal("close segments were not merged")
	}
	if got := initialMemory(t, out)[:8]; !bytes.Equal(got, []byte("abc\x00\x00XY\x00")) {
		t.Fatalf("memory %q", got)
	}
}

func FuzzCoalesceData(f *testing.F) {
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x05\x03\x01\x00\x01\x0b\x10\x02\x00\x41\x00\x0b\x03abc\x00\x41\x05\x0b\x02XY"))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x0c\x01\x02\x0b\x10\x02\x00\x41\x00\x0b\x03abc\x00\x41\x05\x0b\x02XY"))
	f.Fuzz(func(t *testing.T, code []byte) {
		out := coalesceData(code)
		if bytes.Equal(out, code) {
			return
		}
		// A rewrite is itself plain and stable: coalescing again changes
		// nothing, and it never holds more segments.
		if again := coalesceData(out); !bytes.Equal(again, out) {
			t.Fatalf("not stable:\n%x\n%x", out, again)
		}
	})
}
