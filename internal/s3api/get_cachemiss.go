package s3api

import (
	"io"
	"net/http"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/obs"
	"github.com/facet-sds/facet/internal/storage"
)

// A GET whose only possible request filter is caching, of an object the
// node's cache holds no version of, cannot hit: it is answered from one
// backend read like a GET without filters (get_oneread.go), and the
// caching policy, decided from the metadata that read returns, admits the
// stream on the way. A miss then costs the store one round trip instead
// of a metadata read and a data read. The entry is tagged with the
// version the read streamed, as every fill is (package cache).

// filterBoundOther is filterBound leaving some filters out
// (control.Service.MayFilterOther).
type filterBoundOther interface {
	MayFilterOther(req *filter.Request, except ...string) bool
}

// cacheCannotHit reports whether req's object can be read before its
// metadata although filters may apply: caching alone may, and the cache
// holds nothing of the object.
func (s *Server) cacheCannotHit(req *request, freq *filter.Request) bool {
	fb, ok := s.reqFilters.(filterBoundOther)
	return ok && s.cache != nil && !s.cache.Holds(req.target.bucket, req.target.key) && !fb.MayFilterOther(freq, "caching")
}

// admitOnRead returns body admitted to the cache when a caching policy
// is in force for the object and admits GETs (nil otherwise), and marks
// the response a miss when one is in force. The caller closes what it
// returns (which aborts a fill the client did not read to the end).
func (s *Server) admitOnRead(w http.ResponseWriter, req *request, info storage.ObjectInfo, body io.Reader) *fillingReader {
	set, ok := s.cacheFor(req, filter.MethodGet, info.Meta.Size, info.Meta)
	if !ok {
		return nil
	}
	req.obs.Cache = obs.CacheMiss
	w.Header().Set("X-Facet-Cache", string(obs.CacheMiss))
	if !set.AdmitGet {
		return nil
	}
	fill := s.cache.Admit(policyOf(set), info.Bucket, info.Key, info.Meta.Size)
	if fill == nil {
		return nil
	}
	return &fillingReader{rc: io.NopCloser(body), fill: fill, v: versionOf(info), log: s.log}
}
