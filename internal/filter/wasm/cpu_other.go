//go:build !linux

package wasm

import "time"

// lockThreadCPU reports that the platform has no per-thread CPU time:
// instances are charged their wall time.
func lockThreadCPU() (time.Duration, bool) { return 0, false }

func unlockThreadCPU() time.Duration { return 0 }
