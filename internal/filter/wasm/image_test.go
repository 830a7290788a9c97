package wasm

import (
	"bytes"
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// TestMemoryImageMatchesDataSegments: an instance of the stripped module
// started on the memory image holds, before any code runs, exactly the
// memory wazero builds from the original module's data segments.
func TestMemoryImageMatchesDataSegments(t *testing.T) {
	for _, name := range []string{"noop", "redact"} {
		code := moduleBytes(t, name)
		img, prepared := prepare(code)
		if img == nil {
			t.Skipf("%s: no memory image on this system", name)
		}
		want := initialMemory(t, code)
		got := initialMemoryWith(t, prepared, img.withMemory)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: memory from the image differs (%d vs %d bytes)", name, len(got), len(want))
		}
	}
}

func FuzzSplitData(f *testing.F) {
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	// (memory 1) (data (i32.const 8) "hi") (data (i32.const 4000) "x")
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x05\x03\x01\x00\x01\x0b\x0d\x02\x00\x41\x08\x0b\x02hi\x00\x41\xa0\x1f\x0b\x01x"))
	f.Fuzz(func(t *testing.T, code []byte) {
		stripped, image, err := splitData(code, 4096)
		if err != nil {
			return
		}
		if len(image)%4096 != 0 || len(stripped) == 0 {
			t.Fatalf("image of %d bytes, stripped %d", len(image), len(stripped))
		}
		if _, _, err := splitData(stripped, 4096); err == nil {
			t.Fatal("a stripped module still has data to split")
		}
	})
}

// TestMemoryImageIsPrivate: what an instance writes over its image stays
// its own: neither an instance running beside it nor a later one sees it.
func TestMemoryImageIsPrivate(t *testing.T) {
	ctx := context.Background()
	img, prepared := prepare(moduleBytes(t, "noop"))
	if img == nil {
		t.Skip("no memory image on this system")
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		t.Fatal(err)
	}
	cm, err := rt.CompileModule(ctx, prepared)
	if err != nil {
		t.Fatal(err)
	}
	start := func() api.Module {
		m, err := rt.InstantiateModule(img.withMemory(ctx), cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := start(), start()
	defer b.Close(ctx)
	orig, _ := b.Memory().Read(0, uint32(img.size))
	want := bytes.Clone(orig)
	junk := bytes.Repeat([]byte{0xA5}, img.size)
	if !a.Memory().Write(0, junk) {
		t.Fatal("write")
	}
	if got, _ := a.Memory().Read(0, uint32(img.size)); !bytes.Equal(got, junk) {
		t.Fatal("the instance does not read back its own write")
	}
	if got, _ := b.Memory().Read(0, uint32(img.size)); !bytes.Equal(got, want) {
		t.Fatal("a write of one instance reached another's memory")
	}
	_ = a.Close(ctx)
	c := start()
	defer c.Close(ctx)
	if got, _ := c.Memory().Read(0, uint32(img.size)); !bytes.Equal(got, want) {
		t.Fatal("a write of a closed instance reached a new one")
	}
}
