//go:build !unix

package wasm

import "context"

// withMemory keeps wazero's default memory where there is no mmap.
func withMemory(ctx context.Context) context.Context { return ctx }
