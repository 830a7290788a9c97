package fs

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ProbeWrite tells whether the data directory takes writes now: it
// writes, syncs and removes a one-byte file where data files go, which a
// read-only or failing filesystem refuses with the system's error
// (EROFS, EIO), and reports ENOSPC while the last data file write found
// no space left.
func (s *Store) ProbeWrite() error {
	p := filepath.Join(s.dataDir, ".probe")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("fs: probe: %w", err)
	}
	_, err = f.Write([]byte{1})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if rerr := os.Remove(p); err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("fs: probe: %w", err)
	}
	if s.full.Load() {
		return fmt.Errorf("fs: the last data file write found no space left: %w", syscall.ENOSPC)
	}
	return nil
}
