// Package backup owns Facet's backup archive of a node's metadata: a tar
// holding a manifest, the metadata store's records and, on a node with the
// embedded filesystem backend, a consistent copy of its object index.
// Write makes one from a running node's stores; Restore puts one back into
// stopped ones. Object data files are not in it (docs/backup.md says how
// to copy them), nor is the master key, which must be kept apart.
package backup

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// The archive's entries, in this order; the index only when there is one.
const (
	manifestName = "manifest.json"
	metaName     = "meta.jsonl"
	indexName    = "objects/index.db"
)

// Manifest describes an archive.
type Manifest struct {
	Created time.Time `json:"created"`
	// Release is the version of the Facet that wrote it.
	Release string `json:"release"`
	// MetaRecords counts the metadata store's records.
	MetaRecords int `json:"meta_records"`
	// Index says whether the archive holds an object index, of IndexBytes.
	Index      bool  `json:"index"`
	IndexBytes int64 `json:"index_bytes,omitempty"`
}

// MetaDumper is the metadata store, as Write reads it.
type MetaDumper interface {
	Dump(ctx context.Context, w io.Writer) (int, error)
}

// IndexSnapshotter is the embedded backend's index, as Write reads it:
// fn is given its size and a function that copies it, consistently.
type IndexSnapshotter interface {
	SnapshotIndex(fn func(size int64, write func(io.Writer) error) error) error
}

// Write writes an archive of meta and, when idx is not nil, of the object
// index, to w. release names this binary in the manifest.
func Write(ctx context.Context, w io.Writer, meta MetaDumper, idx IndexSnapshotter, release string) (Manifest, error) {
	// The dump comes first, whole, so that the manifest can count it.
	var dump bytes.Buffer
	n, err := meta.Dump(ctx, &dump)
	if err != nil {
		return Manifest{}, fmt.Errorf("backup: %w", err)
	}
	m := Manifest{Created: time.Now().UTC(), Release: release, MetaRecords: n, Index: idx != nil}
	tw := tar.NewWriter(w)
	add := func(name string, size int64, write func(io.Writer) error) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: m.Created, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		return write(tw)
	}
	bytesOf := func(b []byte) func(io.Writer) error {
		return func(w io.Writer) error { _, err := w.Write(b); return err }
	}
	if idx == nil {
		err = writeHead(add, m, dump.Bytes(), bytesOf)
	} else {
		// The index's size is known only inside its read transaction,
		// which must stay open while it is copied.
		err = idx.SnapshotIndex(func(size int64, copyIndex func(io.Writer) error) error {
			m.IndexBytes = size
			if err := writeHead(add, m, dump.Bytes(), bytesOf); err != nil {
				return err
			}
			return add(indexName, size, copyIndex)
		})
	}
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		return Manifest{}, fmt.Errorf("backup: %w", err)
	}
	return m, nil
}

func writeHead(add func(string, int64, func(io.Writer) error) error, m Manifest, dump []byte, bytesOf func([]byte) func(io.Writer) error) error {
	mj, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := add(manifestName, int64(len(mj)), bytesOf(mj)); err != nil {
		return err
	}
	return add(metaName, int64(len(dump)), bytesOf(dump))
}

// Targets are where Restore puts an archive back.
type Targets struct {
	// Meta loads the metadata store's records.
	Meta func(r io.Reader) (int, error)
	// Index writes the object index; nil when the node keeps its objects
	// in a remote store, which makes an archive holding an index an error.
	Index func(r io.Reader) error
}

// ErrNotArchive is returned for input that is not a Facet backup.
var ErrNotArchive = errors.New("not a Facet backup archive")

// Restore reads an archive from r and restores it into t, checking that
// it is whole: the manifest first, then as many records and index bytes
// as it announces.
func Restore(r io.Reader, t Targets) (Manifest, error) {
	tr := tar.NewReader(r)
	next := func(want string) error {
		h, err := tr.Next()
		if err != nil {
			return fmt.Errorf("backup: %w: reading %s: %w", ErrNotArchive, want, err)
		}
		if h.Name != want {
			return fmt.Errorf("backup: %w: entry %q where %q was expected", ErrNotArchive, h.Name, want)
		}
		return nil
	}
	var m Manifest
	if err := next(manifestName); err != nil {
		return m, err
	}
	if err := json.NewDecoder(io.LimitReader(tr, 1<<20)).Decode(&m); err != nil {
		return m, fmt.Errorf("backup: %w: manifest: %w", ErrNotArchive, err)
	}
	if m.Index && t.Index == nil {
		return m, errors.New("backup: the archive holds an object index, and the target keeps no embedded backend (restore it where `facet serve` keeps its objects in the data directory)")
	}
	if err := next(metaName); err != nil {
		return m, err
	}
	n, err := t.Meta(tr)
	if err != nil {
		return m, err
	}
	if n != m.MetaRecords {
		return m, fmt.Errorf("backup: the archive announces %d metadata records and holds %d: it is damaged", m.MetaRecords, n)
	}
	if m.Index {
		if err := next(indexName); err != nil {
			return m, err
		}
		cr := &countingReader{r: tr}
		if err := t.Index(cr); err != nil {
			return m, err
		}
		if cr.n != m.IndexBytes {
			return m, fmt.Errorf("backup: the archive announces an index of %d bytes and holds %d: it is damaged", m.IndexBytes, cr.n)
		}
	}
	return m, nil
}

// ReadManifest reads only an archive's manifest.
func ReadManifest(r io.Reader) (Manifest, error) {
	var m Manifest
	tr := tar.NewReader(r)
	h, err := tr.Next()
	if err != nil || h.Name != manifestName {
		return m, fmt.Errorf("backup: %w", ErrNotArchive)
	}
	if err := json.NewDecoder(io.LimitReader(tr, 1<<20)).Decode(&m); err != nil {
		return m, fmt.Errorf("backup: %w: manifest: %w", ErrNotArchive, err)
	}
	return m, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
