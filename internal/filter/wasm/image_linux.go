package wasm

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// memImage is a module's initial memory (its data segments laid out),
// written once into a sealed memfd. Every instance maps it privately
// (copy on write) at the start of its linear memory instead of having
// wazero copy the segments into fresh memory: a Go module's 1.3 MB of
// data cost a copy and hundreds of page faults per instance, most of
// which it never writes to.
type memImage struct {
	fd   int
	size int
}

func imagePageSize() int { return os.Getpagesize() }

// newMemImage returns the image holding b (whole pages), or an error when
// the system has no memfd.
func newMemImage(b []byte) (*memImage, error) {
	fd, err := unix.MemfdCreate("facet-wasm-image", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd: %w", err)
	}
	for off := 0; off < len(b); {
		n, err := unix.Pwrite(fd, b[off:], int64(off))
		if err != nil {
			_ = unix.Close(fd)
			return nil, fmt.Errorf("memfd: %w", err)
		}
		off += n
	}
	// Sealed: nothing can change the image under the instances mapping it.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("memfd seals: %w", err)
	}
	img := &memImage{fd: fd, size: len(b)}
	// The descriptor lives as long as the Module holding the image: an
	// instance's mapping keeps the pages itself once made.
	runtime.AddCleanup(img, func(fd int) { _ = unix.Close(fd) }, fd)
	return img, nil
}

// withMemory is withMemory(ctx) with the image mapped at offset 0.
func (img *memImage) withMemory(ctx context.Context) context.Context {
	if img == nil {
		return withMemory(ctx)
	}
	return experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory {
		m := newMappedMemory(0, max)
		mm := m.(*mappedMemory)
		if len(mm.buf) < img.size {
			mm.Free()
			return &mappedMemory{}
		}
		_, _, errno := syscall.Syscall6(syscall.SYS_MMAP, uintptr(unsafe.Pointer(&mm.buf[0])), uintptr(img.size),
			syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_FIXED, uintptr(img.fd), 0)
		runtime.KeepAlive(img)
		if errno != 0 {
			mm.Free()
			return &mappedMemory{}
		}
		return mm
	}))
}
