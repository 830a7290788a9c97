package fs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// SnapshotIndex gives fn a consistent copy of the index while the store
// keeps serving: its size, and write, which copies it (a bbolt read
// transaction held until fn returns). The data files are not in it: they
// are immutable, so a copy of them taken after the snapshot holds every
// file the snapshot refers to, save those of objects deleted in between.
func (s *Store) SnapshotIndex(fn func(size int64, write func(io.Writer) error) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		return fn(tx.Size(), func(w io.Writer) error {
			_, err := tx.WriteTo(w)
			return err
		})
	})
}

// ErrIndexExists refuses to restore over an index, unless forced.
var ErrIndexExists = errors.New("an object index already exists")

// RestoreIndex writes a SnapshotIndex copy as the index of the store in
// dir (durably: temp file, fsync, rename, fsync of the directory). An
// existing index is refused unless force is set. No store may be open on
// dir. On its next Open the store removes the data files the restored
// index does not refer to (objects written after the snapshot).
func RestoreIndex(dir string, r io.Reader, force bool) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("fs: restore index: %w", err)
	}
	path := filepath.Join(dir, "index.db")
	if _, err := os.Stat(path); err == nil && !force {
		return fmt.Errorf("fs: restore index: %w at %s; give --force to replace it", ErrIndexExists, path)
	}
	tmp := path + ".restore"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("fs: restore index: %w", err)
	}
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = checkIndexFile(tmp)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("fs: restore index: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fs: restore index: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fs: restore index: %w", err)
	}
	return nil
}

// checkIndexFile opens a restored file read-only and checks it is an
// index of a format this binary reads, before it replaces anything.
func checkIndexFile(path string) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("not an index: %w", err)
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error {
		stored, fresh, err := readFormat(tx)
		if err != nil || fresh {
			return err
		}
		return checkStored(path, stored)
	})
}
