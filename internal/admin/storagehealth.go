package admin

import (
	"errors"
	"sync"
	"syscall"
	"time"
)

// StorageProbe tells whether the node's local storage takes writes (the
// embedded backend: a file written, synced and removed).
type StorageProbe interface {
	ProbeWrite() error
}

// Storage states, as /healthz and /v1/nodes report them.
const (
	StorageWritable = "writable"
	StorageFull     = "full"
	StorageReadOnly = "read-only"
	StorageFailing  = "failing"
)

// storageState classifies a probe's result.
func storageState(err error) string {
	switch {
	case err == nil:
		return StorageWritable
	case errors.Is(err, syscall.EROFS):
		return StorageReadOnly
	case errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT):
		return StorageFull
	}
	return StorageFailing
}

// storageHealth probes at most once per interval: /healthz answers
// anyone, and must not become a way to make the node write.
type storageHealth struct {
	probe StorageProbe
	every time.Duration

	mu     sync.Mutex
	at     time.Time
	state  string
	detail string
}

func (s *storageHealth) get() (state, detail string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := time.Now(); s.state == "" || now.Sub(s.at) >= s.every {
		err := s.probe.ProbeWrite()
		s.state, s.at, s.detail = storageState(err), now, ""
		if err != nil {
			s.detail = err.Error()
		}
	}
	return s.state, s.detail
}
