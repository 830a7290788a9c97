package wasm

import "syscall"

// mapNoReserve: the mapping does not count against overcommit until used.
const mapNoReserve = syscall.MAP_NORESERVE

// adviseHuge asks for transparent huge pages over a linear memory (where
// the system leaves them to madvise): a Go module's runtime touches a few
// MiB while it starts, one fault per 2 MiB instead of one per 4 KiB.
func adviseHuge(b []byte) { _ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) }
