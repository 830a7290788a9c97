package fs

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		s, err := Open(context.Background(), filepath.Join(t.TempDir(), "store"), Options{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
