//go:build !linux

package wasm

import (
	"context"
	"errors"
)

// memImage needs memfd (Linux): elsewhere wazero copies the data
// segments into each instance.
type memImage struct{ size int }

func imagePageSize() int { return 4096 }

func newMemImage([]byte) (*memImage, error) {
	return nil, errors.New("no memory images on this system")
}

func (img *memImage) withMemory(ctx context.Context) context.Context { return withMemory(ctx) }
