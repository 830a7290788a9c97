package dataplane

import (
	"context"
	"io"
	"sync"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/storage"
)

// A GET of a whole object that no request filter can apply to is served
// from ONE backend read: storage.Backend.GetObject returns the object's
// metadata with its stream, both of the same version, so the answer
// (conditions, ETag, length, reverse plan) always describes the bytes
// sent, with no window for an overwrite between a metadata read and a
// data read. Over a remote store that is one round trip instead of two
// (HeadObject then GetObject). Ranges (whose bounds need the logical size
// first), partNumber, revalidations (If-None-Match, If-Modified-Since)
// and objects some GET filter could apply to (caching, select, GET
// transforms, which decide from the object's metadata) keep the
// metadata-first path of Get, but for caching alone over an object the
// cache holds nothing of (read_cachemiss.go).

// filterBound is what RequestFilters may also answer: whether any filter
// could be in force for a request, before the object's metadata is known
// (control.Service.MayFilter). Without it, filters are assumed possible.
type filterBound interface {
	MayFilter(req *filter.Request) bool
}

// oneReadGet reports whether a GET can open the object before reading its
// metadata.
func (p *Plane) oneReadGet(req GetRequest) bool {
	// A revalidation is likely answered 304 without a body: reading the
	// metadata first then costs no data read.
	if req.PartNumber > 0 || req.Range != "" || req.Conditions.Revalidation() {
		return false
	}
	if p.reqFilters == nil {
		return true
	}
	fb, ok := p.reqFilters.(filterBound)
	if !ok {
		return false
	}
	freq := req.filterRequest(filter.MethodGet, -1, storage.ObjectMeta{})
	return !fb.MayFilter(freq) || p.cacheCannotHit(req.Target, freq)
}

// getOneRead answers a GET from one backend GetObject.
func (p *Plane) getOneRead(ctx context.Context, req GetRequest) (GetResult, error) {
	var res GetResult
	bucket, key := req.Bucket, req.Key
	rc, info, err := p.backend.GetObject(ctx, bucket, key, nil)
	if err != nil {
		return res, S3Error(err, bucket, key)
	}
	held := &heldStream{Backend: p.backend, bucket: bucket, key: key, info: info, rc: rc}
	closers := []func() error{held.release}
	fail := func(err error) (GetResult, error) {
		closeAllFuncs(closers)
		return res, err
	}
	res.Info = info
	if err := req.Conditions.eval(info, false); err != nil {
		return fail(err)
	}
	res.Whole, res.Length = true, info.Meta.Size
	var body io.Reader = rc
	if Transformed(info.Meta) {
		// The decoders read the stored stream through held: the span
		// they open first is the stream already open.
		logical, err := p.openLogical(ctx, req.Target, held, info, nil)
		if err != nil {
			return fail(decodeErr(err, bucket, key))
		}
		closers = append(closers, logical.Close)
		body = logical
	}
	if fr := p.admitOnRead(req.Target, info, body, &res.Cache); fr != nil {
		closers = append(closers, fr.Close)
		body = fr
	}
	if len(closers) == 1 {
		// rc alone: handed on as it is, so that its file can be sent as
		// it stands (sendfile).
		res.Body = rc
	} else {
		res.Body = readCloser{Reader: body, close: func() error { closeAllFuncs(closers); return nil }}
	}
	var err2 error
	if res.Body, err2 = peekDecoded(info, res.Body, res.Length); err2 != nil {
		return res, err2
	}
	return res, nil
}

// closeAllFuncs runs closers last first.
func closeAllFuncs(cs []func() error) {
	for i := len(cs) - 1; i >= 0; i-- {
		_ = cs[i]()
	}
}

// heldStream is a storage.Backend for the decoders of one GET whose
// stored stream is already open: the opens that read it sequentially from
// where it stands (the whole object, or a multipart object's parts in
// order) are served from it, any other open goes to the backend. The
// version check of StoredSource holds: the info handed back is the
// stream's own.
type heldStream struct {
	storage.Backend
	bucket, key string
	info        storage.ObjectInfo

	mu   sync.Mutex
	rc   io.ReadCloser // nil once closed
	pos  int64         // stored offset rc stands at
	busy bool          // a section is out
}

func (h *heldStream) GetObject(ctx context.Context, bucket, key string, rng *storage.Range) (io.ReadCloser, storage.ObjectInfo, error) {
	off, n := int64(0), h.info.StoredSize
	if rng != nil {
		off, n = rng.Start, rng.Length
	}
	h.mu.Lock()
	if bucket == h.bucket && key == h.key && h.rc != nil && !h.busy && off == h.pos && off+n <= h.info.StoredSize {
		h.busy = true
		h.mu.Unlock()
		return &heldSection{h: h, left: n}, h.info, nil
	}
	h.mu.Unlock()
	return h.Backend.GetObject(ctx, bucket, key, rng)
}

// release closes the stream unless a section still reads it.
func (h *heldStream) release() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rc != nil && !h.busy {
		h.rc.Close()
		h.rc = nil
	}
	return nil
}

// heldSection reads the next left bytes of a held stream. Closed after
// reading them all it hands the stream back for the next section; closed
// early it closes the stream (where it stands is then unknown).
type heldSection struct {
	h    *heldStream
	left int64
	done bool
}

func (s *heldSection) Read(p []byte) (int, error) {
	if s.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > s.left {
		p = p[:s.left]
	}
	n, err := s.h.rc.Read(p)
	s.left -= int64(n)
	s.h.pos += int64(n) // only the section's reader moves it while busy
	switch {
	case err == io.EOF && s.left > 0:
		err = io.ErrUnexpectedEOF
	case err == nil && s.left == 0:
		err = io.EOF
	}
	return n, err
}

func (s *heldSection) Close() error {
	if s.done {
		return nil
	}
	s.done = true
	h := s.h
	h.mu.Lock()
	defer h.mu.Unlock()
	h.busy = false
	if s.left > 0 && h.rc != nil {
		err := h.rc.Close()
		h.rc = nil
		return err
	}
	return nil
}
