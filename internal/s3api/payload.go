package s3api

import (
	"crypto/md5"
	"encoding/hex"
	"hash"
	"io"
)

// payload is a request body on its way to storage: it counts and digests
// what passes and verifies client-supplied digests at the end.
type payload interface {
	io.Reader
	MD5Hex() string
	Checksums() map[string]string
	BytesRead() int64
}

type md5Payload struct {
	r io.Reader
	h hash.Hash
	n int64
}

func (p *md5Payload) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	p.h.Write(b[:n])
	return n, err
}
func (p *md5Payload) MD5Hex() string               { return hex.EncodeToString(p.h.Sum(nil)) }
func (p *md5Payload) Checksums() map[string]string { return nil }
func (p *md5Payload) BytesRead() int64             { return p.n }

// newPayload wraps the authenticated body; it reads at most one byte more
// than declared so an over-long body is detected without reading it all.
func newPayload(req *request, size int64) (payload, error) {
	return &md5Payload{r: io.LimitReader(req.body, size+1), h: md5.New()}, nil
}
