package wasm

import "syscall"

// mapNoReserve: the mapping does not count against overcommit until used.
const mapNoReserve = syscall.MAP_NORESERVE
