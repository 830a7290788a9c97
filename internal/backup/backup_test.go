package backup

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

type dumper string

func (d dumper) Dump(_ context.Context, w io.Writer) (int, error) {
	_, err := io.WriteString(w, string(d))
	return strings.Count(string(d), "\n"), err
}

type index []byte

func (x index) SnapshotIndex(fn func(int64, func(io.Writer) error) error) error {
	return fn(int64(len(x)), func(w io.Writer) error { _, err := w.Write(x); return err })
}

// restoreInto restores archive into buffers, counting lines as records.
func restoreInto(archive []byte, withIndex bool) (Manifest, string, string, error) {
	var meta, idx bytes.Buffer
	t := Targets{Meta: func(r io.Reader) (int, error) {
		n, err := io.Copy(&meta, r)
		_ = n
		return strings.Count(meta.String(), "\n"), err
	}}
	if withIndex {
		t.Index = func(r io.Reader) error { _, err := io.Copy(&idx, r); return err }
	}
	m, err := Restore(bytes.NewReader(archive), t)
	return m, meta.String(), idx.String(), err
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	m, err := Write(t.Context(), &buf, dumper("a\nb\n"), index("INDEX"), "v-test")
	if err != nil || m.MetaRecords != 2 || !m.Index || m.IndexBytes != 5 || m.Release != "v-test" {
		t.Fatalf("write: %+v, %v", m, err)
	}
	archive := buf.Bytes()
	if got, err := ReadManifest(bytes.NewReader(archive)); err != nil || got.MetaRecords != 2 || got.IndexBytes != 5 {
		t.Fatalf("manifest: %+v, %v", got, err)
	}
	got, meta, idx, err := restoreInto(archive, true)
	if err != nil || meta != "a\nb\n" || idx != "INDEX" || got.MetaRecords != 2 {
		t.Fatalf("restore: %+v %q %q %v", got, meta, idx, err)
	}
	// A node without the embedded backend cannot take an index.
	if _, _, _, err := restoreInto(archive, false); err == nil || !strings.Contains(err.Error(), "object index") {
		t.Fatalf("restore of an index without a target: %v", err)
	}
	// Without an index.
	buf.Reset()
	if _, err := Write(t.Context(), &buf, dumper("a\n"), nil, "v"); err != nil {
		t.Fatal(err)
	}
	if _, meta, _, err := restoreInto(buf.Bytes(), false); err != nil || meta != "a\n" {
		t.Fatalf("restore without index: %q %v", meta, err)
	}
}

// A cut archive (a backup interrupted mid-stream) is refused.
func TestDamagedArchive(t *testing.T) {
	var buf bytes.Buffer
	if _, err := Write(t.Context(), &buf, dumper(strings.Repeat("record\n", 100)), index(bytes.Repeat([]byte("i"), 4096)), "v"); err != nil {
		t.Fatal(err)
	}
	archive := buf.Bytes()
	for _, cut := range []int{0, 100, 700, len(archive) / 2, len(archive) - 1500} {
		if _, _, _, err := restoreInto(archive[:cut], true); err == nil {
			t.Errorf("archive cut at %d of %d restored", cut, len(archive))
		}
	}
	if _, _, _, err := restoreInto([]byte("not a tar at all, just text that is long enough to fill a header block"), true); !errors.Is(err, ErrNotArchive) {
		t.Errorf("garbage: %v", err)
	}
}

// FuzzRestore: no input crashes Restore, and whatever it accepts holds
// what its manifest announces.
func FuzzRestore(f *testing.F) {
	var buf bytes.Buffer
	if _, err := Write(context.Background(), &buf, dumper("a\nb\n"), index("INDEX"), "v"); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, archive []byte) {
		m, meta, idx, err := restoreInto(archive, true)
		if err != nil {
			return
		}
		if strings.Count(meta, "\n") != m.MetaRecords || (m.Index && int64(len(idx)) != m.IndexBytes) {
			t.Fatalf("accepted an archive that does not hold what it announces: %+v, %d meta lines, %d index bytes", m, strings.Count(meta, "\n"), len(idx))
		}
	})
}
