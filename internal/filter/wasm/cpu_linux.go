package wasm

import (
	"runtime"
	"syscall"
	"time"
)

// rusageThread is Linux's RUSAGE_THREAD: the calling thread's usage.
const rusageThread = 1

// lockThreadCPU wires the calling goroutine to its thread, so that the
// thread's CPU time is the instance's (plus the Go runtime's work done on
// that thread meanwhile, garbage collection assists included), and
// returns that thread's CPU time so far.
func lockThreadCPU() (time.Duration, bool) {
	runtime.LockOSThread()
	d, ok := threadCPU()
	if !ok {
		runtime.UnlockOSThread()
	}
	return d, ok
}

// unlockThreadCPU reads the thread's CPU time and unwires the goroutine.
func unlockThreadCPU() time.Duration {
	d, _ := threadCPU()
	runtime.UnlockOSThread()
	return d
}

func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
