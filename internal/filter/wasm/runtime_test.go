package wasm

import (
	"context"
	"testing"
)

// emptyCommand is the smallest WASI command, (module (func (export
// "_start"))): it compiles in milliseconds even under -race.
var emptyCommand = []byte("\x00asm\x01\x00\x00\x00" +
	"\x01\x04\x01\x60\x00\x00" + // type: () -> ()
	"\x03\x02\x01\x00" + // func 0 of type 0
	"\x07\x0a\x01\x06_start\x00\x00" + // export "_start"
	"\x0a\x04\x01\x02\x00\x0b") // body: end

// TestCompilationCacheReusedAcrossRuntimes: a runtime started on the
// cache directory another one wrote loads the module rather than
// compiling it (what a restarted gateway does), as the counters say.
func TestCompilationCacheReusedAcrossRuntimes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	code := emptyCommand
	stats := func() CompileStats {
		rt, err := NewRuntime(ctx, Config{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close(ctx)
		m, err := rt.Compile(ctx, "noop", code)
		if err != nil {
			t.Fatal(err)
		}
		_ = m.Close(ctx)
		return rt.Stats()
	}
	if got := stats(); got != (CompileStats{Compiled: 1}) {
		t.Fatalf("first runtime: %+v, want one compiled", got)
	}
	if n := cacheEntries(dir); n == 0 {
		t.Fatal("nothing written to the compilation cache")
	}
	if got := stats(); got != (CompileStats{Loaded: 1}) {
		t.Fatalf("second runtime on the same cache: %+v, want one loaded", got)
	}
	// Without a cache directory every compile is a compile.
	rt, err := NewRuntime(ctx, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	if _, err := rt.Compile(ctx, "noop", code); err != nil {
		t.Fatal(err)
	}
	if got := rt.Stats(); got != (CompileStats{Compiled: 1}) {
		t.Fatalf("in-memory runtime: %+v", got)
	}
}
