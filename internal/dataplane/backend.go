package dataplane

import (
	"context"
	"fmt"
	"io"

	"github.com/facet-sds/facet/internal/storage"
)

// StoredSource reads ranges of one stored object version. Every open
// checks that the object is still the version first seen, so a decoder
// never mixes bytes of two versions.
type StoredSource struct {
	Backend storage.Backend
	Bucket  string
	Key     string
	Info    storage.ObjectInfo
}

// Size is the stored length.
func (s *StoredSource) Size() int64 { return s.Info.StoredSize }

// ErrChanged reports that the object was overwritten while being read.
var ErrChanged = fmt.Errorf("object changed while being read")

// Open returns stored bytes [off, off+n).
func (s *StoredSource) Open(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	if n == 0 {
		return io.NopCloser(eofReader{}), nil
	}
	// Where the backend keeps versions, read exactly the version first
	// seen, whatever context the reader runs under.
	ctx = pinVersion(ctx, s.Bucket, s.Key, s.Info.VersionID)
	rc, info, err := s.Backend.GetObject(ctx, s.Bucket, s.Key, &storage.Range{Start: off, Length: n})
	if err != nil {
		return nil, err
	}
	if info.Meta.ETag != s.Info.Meta.ETag || !info.LastModified.Equal(s.Info.LastModified) {
		rc.Close()
		return nil, ErrChanged
	}
	return rc, nil
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
