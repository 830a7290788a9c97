package s3api

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/facet-sds/facet/internal/dataplane"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/storage"
)

// A GET of a whole object that no request filter can apply to is served
// from ONE backend read: storage.Backend.GetObject returns the object's
// metadata with its stream, both of the same version, so the headers
// (conditions, ETag, length, reverse plan) always describe the bytes sent,
// with no window for an overwrite between a metadata read and a data read.
// Over a remote store that is one round trip instead of two (HeadObject
// then GetObject). Ranges (whose bounds need the logical size first),
// partNumber, revalidations (If-None-Match, If-Modified-Since) and
// objects some GET filter could apply to (caching, select, GET
// transforms, which decide from the object's metadata) keep the
// metadata-first path of getObject, but for caching alone over an object
// the cache holds nothing of (get_cachemiss.go).

// filterBound is what RequestFilters may also answer: whether any filter
// could be in force for a request, before the object's metadata is known
// (control.Service.MayFilter). Without it, filters are assumed possible.
type filterBound interface {
	MayFilter(req *filter.Request) bool
}

// oneReadGet reports whether a GET can open the object before reading its
// metadata.
func (s *Server) oneReadGet(req *request, partNumber int) bool {
	// A revalidation is likely answered 304 without a body: reading the
	// metadata first then costs no data read.
	if partNumber > 0 || req.Header.Get("Range") != "" ||
		req.Header.Get("If-None-Match") != "" || req.Header.Get("If-Modified-Since") != "" {
		return false
	}
	if s.reqFilters == nil {
		return true
	}
	fb, ok := s.reqFilters.(filterBound)
	if !ok {
		return false
	}
	freq := req.filterRequest(filter.MethodGet, -1, storage.ObjectMeta{})
	return !fb.MayFilter(freq) || s.cacheCannotHit(req, freq)
}

// getOneRead answers a GET from one backend GetObject.
func (s *Server) getOneRead(w http.ResponseWriter, req *request) error {
	ctx := req.Context()
	bucket, key := req.target.bucket, req.target.key
	rc, info, err := s.backend.GetObject(ctx, bucket, key, nil)
	if err != nil {
		return storageErr(err, bucket, key)
	}
	held := &heldStream{Backend: s.backend, bucket: bucket, key: key, info: info, rc: rc}
	defer held.release()
	if err := checkGetConditions(w, req, info); err != nil {
		return err
	}
	writeGetHeaders(w.Header(), req, info, true)
	w.Header().Set("Content-Length", strconv.FormatInt(info.Meta.Size, 10))
	var body io.Reader = rc
	if dataplane.Transformed(info.Meta) {
		// The decoders read the stored stream through held: the span
		// they open first is the stream already open.
		logical, err := s.openLogicalFrom(ctx, req, held, info, nil)
		if err != nil {
			resetHeaders(w.Header())
			return decodeErr(err, bucket, key)
		}
		defer logical.Close()
		body = logical
	}
	if fr := s.admitOnRead(w, req, info, body); fr != nil {
		defer fr.Close()
		body = fr
	}
	return s.sendObject(w, req, info, body, http.StatusOK, info.Meta.Size)
}

// heldStream is a storage.Backend for the decoders of one GET whose
// stored stream is already open: the opens that read it sequentially from
// where it stands (the whole object, or a multipart object's parts in
// order) are served from it, any other open goes to the backend. The
// version check of dataplane.StoredSource holds: the info handed back is
// the stream's own.
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
func (h *heldStream) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rc != nil && !h.busy {
		h.rc.Close()
		h.rc = nil
	}
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
