package integrity

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/facet-sds/facet/internal/storage"
)

// A kept version is read through the checks as the latest is: its own
// checksums, a damaged block refused.
func TestVersionReadsVerified(t *testing.T) {
	b, _, dir, c := newBackend(t)
	vb := WithVersions(b)
	v, ok := vb.(storage.Versions)
	if !ok {
		t.Fatal("WithVersions over the fs backend hides its versions")
	}
	ctx := context.Background()
	if err := v.SetVersioning(ctx, "b", storage.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	old := randBytes(2*BlockSize+5, 7)
	first := put(t, vb, "k", old)
	put(t, vb, "k", randBytes(100, 8))
	read := func() ([]byte, error) {
		rc, _, err := v.GetObjectVersion(ctx, "b", "k", first.VersionID, &storage.Range{Start: BlockSize + 1, Length: 10})
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(rc)
	}
	if got, err := read(); err != nil || string(got) != string(old[BlockSize+1:BlockSize+11]) {
		t.Fatalf("version range: %q %v", got, err)
	}
	flip(t, dir, old[BlockSize:BlockSize+64], 3)
	if _, err := read(); !errors.Is(err, ErrCorrupt) || c.n != 1 {
		t.Fatalf("damaged version: %v, %d failures", err, c.n)
	}
	if _, ok := WithVersions(Wrap(noVersions{b.Backend}, Options{})).(storage.Versions); ok {
		t.Fatal("WithVersions invents versions for a backend without them")
	}
}

type noVersions struct{ storage.Backend }
