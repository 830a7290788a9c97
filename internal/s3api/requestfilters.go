package s3api

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/facet-sds/facet/internal/dataplane"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/filter/cache"
	"github.com/facet-sds/facet/internal/obs"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
)

// Filters that act on a request rather than on a PUT body: caching (GET
// and PUT), tagging and the metadata guard (a PUT's metadata), the
// recycle bin (DELETE). They are resolved from the same policy table as
// PUT pipelines, by method.

// RequestFilters resolves the filters in force for a request of any
// method (req.Method); control.Service is one.
type RequestFilters interface {
	ForRequest(req *filter.Request) dataplane.Pipeline
}

// ObjectCache is the node's object cache (internal/filter/cache.Store).
type ObjectCache interface {
	Open(bucket, key string, v cache.Version, off, n int64) (io.ReadCloser, bool)
	Admit(pol cache.Policy, bucket, key string, size int64) *cache.Fill
	// Holds reports whether any version of the object is cached.
	Holds(bucket, key string) bool
}

// Changes hears of every change to an object: the node's cache drops its
// copy and every gateway sharing the bus is told.
type Changes interface {
	Changed(bucket, key string)
}

// changed reports a change to an object, successful or not (a write the
// backend committed may still report an error), before the client is
// answered. Correctness does not rest on it (package cache says why);
// it frees dead entries on every gateway at once.
func (s *Server) changed(bucket, key string) {
	if s.changes != nil {
		s.changes.Changed(bucket, key)
	}
}

// Trash is the recycle bin (internal/filter/trash.Store). Delete deletes
// an object and keeps exactly the version it deleted for keepFor (a PUT
// racing the DELETE is kept, or stays); it fails rather than delete a
// version it did not keep, with an error that Busy recognises when the
// object kept changing under its copy.
type Trash interface {
	Delete(ctx context.Context, tenant, bucket, key string, keepFor time.Duration) error
	Busy(err error) bool
}

type cacher interface {
	CacheSettings() filter.CacheSettings
}

type keeper interface {
	KeepFor() time.Duration
}

// requestSteps returns the filters in force for req's object and method.
func (s *Server) requestSteps(req *request, method filter.Method, size int64, obj storage.ObjectMeta) []dataplane.Step {
	if s.reqFilters == nil {
		return nil
	}
	return s.reqFilters.ForRequest(req.filterRequest(method, size, obj)).Steps
}

// cacheFor returns the caching settings in force, if any.
func (s *Server) cacheFor(req *request, method filter.Method, size int64, obj storage.ObjectMeta) (filter.CacheSettings, bool) {
	if s.cache == nil {
		return filter.CacheSettings{}, false
	}
	for _, st := range s.requestSteps(req, method, size, obj) {
		if c, ok := st.Filter.(cacher); ok {
			return c.CacheSettings(), true
		}
	}
	return filter.CacheSettings{}, false
}

func policyOf(c filter.CacheSettings) cache.Policy { return cache.Policy{Size: c.Size, Evict: c.Evict} }

func versionOf(info storage.ObjectInfo) cache.Version {
	return cache.Version{ETag: info.Meta.ETag, Size: info.Meta.Size, Modified: info.LastModified}
}

// openCached opens bytes of what the client wrote, from the object cache
// when a caching policy is in force and it holds exactly the version the
// GET's metadata read found (see package cache on why that is coherent),
// else from the backend, admitting a whole-object read on the way.
func (s *Server) openCached(ctx context.Context, req *request, info storage.ObjectInfo, rng *storage.Range) (io.ReadCloser, error) {
	set, ok := s.cacheFor(req, filter.MethodGet, info.Meta.Size, info.Meta)
	if !ok {
		return s.openLogical(ctx, req, info, rng)
	}
	off, n := int64(0), info.Meta.Size
	if rng != nil {
		off, n = rng.Start, rng.Length
	}
	if rc, hit := s.cache.Open(info.Bucket, info.Key, versionOf(info), off, n); hit {
		req.obs.Cache = obs.CacheHit
		return rc, nil
	}
	req.obs.Cache = obs.CacheMiss
	rc, err := s.openLogical(ctx, req, info, rng)
	if err != nil || rng != nil || !set.AdmitGet {
		return rc, err
	}
	fill := s.cache.Admit(policyOf(set), info.Bucket, info.Key, info.Meta.Size)
	if fill == nil {
		return rc, nil
	}
	return &fillingReader{rc: rc, fill: fill, v: versionOf(info), log: s.log}, nil
}

// fillingReader copies what a GET streams into a cache fill, committed
// only when the whole object went through: the stream is the one the
// client gets, read from the version the GET's metadata named (every
// backend open checks it) and through the decoders' integrity checks, so
// an entry is never built from a short or another version's read.
type fillingReader struct {
	rc   io.ReadCloser
	fill *cache.Fill
	v    cache.Version
	n    int64
	done bool
	log  interface {
		Warn(msg string, args ...any)
	}
}

func (f *fillingReader) Read(p []byte) (int, error) {
	n, err := f.rc.Read(p)
	if n > 0 && !f.done {
		f.fill.Write(p[:n])
		f.n += int64(n)
	}
	if err == io.EOF && !f.done {
		f.done = true
		if f.n != f.v.Size {
			f.fill.Abort()
		} else {
			// The commit syncs the file: off the response's path.
			go func(fill *cache.Fill, v cache.Version) {
				if cerr := fill.Commit(v); cerr != nil {
					f.log.Warn("cache fill not committed", "err", cerr)
				}
			}(f.fill, f.v)
		}
	}
	return n, err
}

func (f *fillingReader) Close() error {
	if !f.done {
		f.done = true
		f.fill.Abort()
	}
	return f.rc.Close()
}

// putHooks are what a PUT's request filters add to its body and seal.
type putHooks struct {
	peekers []filter.MetaEditor // run at seal with the body's first bytes
	peekN   int
	head    []byte
	fill    *cache.Fill
	handed  bool // the fill went to its committing goroutine
	s       *Server
}

// prepareMeta runs the PUT's metadata editors that need no content
// (refusing the request before its body is read, changing nothing), and
// returns the hooks the body and seal need, or nil. withBody is false for
// requests that carry no object body (CreateMultipartUpload, a copy).
func (s *Server) prepareMeta(req *request, meta *storage.ObjectMeta, size int64, withBody bool) (*putHooks, error) {
	steps := s.requestSteps(req, filter.MethodPut, size, *meta)
	if len(steps) == 0 {
		return nil, nil
	}
	var h putHooks
	h.s = s
	freq := req.filterRequest(filter.MethodPut, size, *meta)
	for _, st := range steps {
		switch f := st.Filter.(type) {
		case filter.MetaEditor:
			if f.Peek() > 0 {
				if withBody {
					h.peekers = append(h.peekers, f)
					h.peekN = max(h.peekN, f.Peek())
				}
				continue
			}
			if err := editMeta(req.Context(), f, freq, nil, meta); err != nil {
				return nil, err
			}
		case cacher:
			if set := f.CacheSettings(); withBody && set.AdmitPut && s.cache != nil {
				h.fill = s.cache.Admit(policyOf(set), req.target.bucket, req.target.key, size)
				if h.fill != nil {
					hh := &h
					req.onDone(func() {
						if !hh.handed {
							hh.fill.Abort()
						}
					})
				}
			}
		}
	}
	if len(h.peekers) == 0 && h.fill == nil {
		return nil, nil
	}
	return &h, nil
}

func editMeta(ctx context.Context, f filter.MetaEditor, freq *filter.Request, head []byte, meta *storage.ObjectMeta) error {
	um := meta.UserMeta
	if um == nil {
		um = map[string]string{}
	}
	if err := f.EditMeta(ctx, freq, head, um); err != nil {
		var r *filter.Refusal
		if errors.As(err, &r) {
			return s3err.Newf(s3err.InvalidArgument, "%s", r.Message)
		}
		return s3err.Wrap(s3err.InternalError, err)
	}
	if len(um) == 0 {
		um = nil
	}
	meta.UserMeta = um
	return nil
}

// tap wraps the client's plain body: it keeps the first bytes the
// content editors want and copies the body into the cache fill.
func (h *putHooks) tap(r io.Reader) io.Reader {
	if h == nil {
		return r
	}
	return &putTap{r: r, h: h}
}

type putTap struct {
	r io.Reader
	h *putHooks
}

func (t *putTap) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		h := t.h
		if len(h.head) < h.peekN {
			h.head = append(h.head, p[:min(n, h.peekN-len(h.head))]...)
		}
		if h.fill != nil {
			h.fill.Write(p[:n])
		}
	}
	return n, err
}

// seal runs the content editors once the body has ended, before the
// object becomes visible.
func (h *putHooks) seal(req *request, m *storage.ObjectMeta) error {
	if h == nil {
		return nil
	}
	freq := req.filterRequest(filter.MethodPut, m.Size, *m)
	for _, f := range h.peekers {
		if err := editMeta(req.Context(), f, freq, h.head, m); err != nil {
			return err
		}
	}
	return nil
}

// committed makes the cache fill an entry for the version the backend
// stored, once the PUT succeeded. The fill holds the bytes the payload's
// MD5 (the ETag) was computed over; Commit checks their count.
func (h *putHooks) committed(info storage.ObjectInfo) {
	if h == nil || h.fill == nil {
		return
	}
	h.handed = true
	go func(fill *cache.Fill, v cache.Version) {
		if err := fill.Commit(v); err != nil {
			h.s.log.Warn("cache admission on PUT not committed", "err", err)
		}
	}(h.fill, versionOf(info))
}

// deleteKept deletes bucket/key for a DELETE: through the recycle bin
// when one is in force for it, which keeps the version it deletes. A
// missing object is no error.
func (s *Server) deleteKept(req *request, bucket, key string) error {
	if s.trash != nil && s.reqFilters != nil {
		freq := req.filterRequest(filter.MethodDelete, -1, storage.ObjectMeta{})
		freq.Bucket, freq.Key = bucket, key
		for _, st := range s.reqFilters.ForRequest(freq).Steps {
			if k, ok := st.Filter.(keeper); ok {
				err := s.trash.Delete(req.Context(), req.tenant, bucket, key, k.KeepFor())
				if err != nil && s.trash.Busy(err) {
					// Retryable: the SDKs retry SlowDown by themselves.
					return &s3err.Error{Code: s3err.SlowDown, Bucket: bucket, Key: key, Message: "The object kept changing while the recycle bin copied it; it was not deleted. Retry.", Err: err}
				}
				return storageErr(err, bucket, key)
			}
		}
	}
	return storageErr(s.backend.DeleteObject(req.Context(), bucket, key), bucket, key)
}
