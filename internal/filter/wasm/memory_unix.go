//go:build unix

package wasm

import (
	"context"
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// withMemory makes instances started with ctx back their linear memory
// with an anonymous mapping of the memory cap, reserved but not committed:
// growing is free (no copy of the memory so far, which wazero's default
// []byte memory does on every grow past its capacity) and the kernel hands
// out zeroed pages on first touch (no clearing of a fresh allocation). A
// Go wasip1 module grows its memory several times while its runtime
// starts: this halves the start of an instance.
func withMemory(ctx context.Context) context.Context {
	return experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(newMappedMemory))
}

type mappedMemory struct{ buf []byte }

func newMappedMemory(_, max uint64) experimental.LinearMemory {
	if max == 0 {
		return &mappedMemory{}
	}
	b, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|mapNoReserve)
	if err != nil {
		return &mappedMemory{}
	}
	adviseHuge(b)
	return &mappedMemory{buf: b}
}

// Reallocate returns the first size bytes; nil when over the mapping (the
// module sees a failed memory.grow).
func (m *mappedMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.buf)) {
		return nil
	}
	return m.buf[:size:size]
}

func (m *mappedMemory) Free() {
	if m.buf != nil {
		_ = syscall.Munmap(m.buf)
		m.buf = nil
	}
}
