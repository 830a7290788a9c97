package s3api

import (
	"io"

	"github.com/facet-sds/facet/internal/s3api/checksum"
)

// payload is a request body on its way to storage: it counts and digests
// what passes and verifies client-supplied digests (Content-MD5,
// x-amz-checksum-* in headers or trailers) when the stream ends.
type payload interface {
	io.Reader
	MD5Hex() string
	Checksums() map[string]string
	Size() int64
	// Close releases the payload if it is abandoned before its end.
	Close() error
}

// pipelineThreshold is the body size from which digests are computed on
// a second goroutine (see checksum.Reader.Pipelined).
const pipelineThreshold = 4 << 20

// newPayload wraps the authenticated body. It reads at most one byte more
// than declared (limit < 0: no bound), so an over-long body is caught
// without reading it all.
func newPayload(req *request, limit int64) (payload, error) {
	spec, err := checksum.ParseHeaders(req.Header)
	if err != nil {
		return nil, err
	}
	var src io.Reader = req.body
	if limit >= 0 {
		src = io.LimitReader(req.body, limit+1)
	}
	r := checksum.NewReader(src, spec, func(name string) string {
		return req.body.Trailer().Get(name)
	})
	if limit >= pipelineThreshold {
		r.Pipelined()
	}
	return r, nil
}

// readBody reads a small request body (an XML document) whole, verifying
// its digests.
func readBody(req *request) ([]byte, error) {
	p, err := newPayload(req, -1)
	if err != nil {
		return nil, err
	}
	return readBounded(p)
}
