package dataplane

import (
	"io"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/obs"
	"github.com/facet-sds/facet/internal/storage"
)

// A GET whose only possible request filter is caching, of an object the
// node's cache holds no version of, cannot hit: it is answered from one
// backend read like a GET without filters (read_oneread.go), and the
// caching policy, decided from the metadata that read returns, admits the
// stream on the way. A miss then costs the store one round trip instead
// of a metadata read and a data read. The entry is tagged with the
// version the read streamed, as every fill is (package cache).

// filterBoundOther is filterBound leaving some filters out
// (control.Service.MayFilterOther).
type filterBoundOther interface {
	MayFilterOther(req *filter.Request, except ...string) bool
}

// cacheCannotHit reports whether t's object can be read before its
// metadata although filters may apply: caching alone may, and the cache
// holds nothing of the object.
func (p *Plane) cacheCannotHit(t Target, freq *filter.Request) bool {
	fb, ok := p.reqFilters.(filterBoundOther)
	return ok && p.cache != nil && !p.cache.Holds(t.Bucket, t.Key) && !fb.MayFilterOther(freq, "caching")
}

// admitOnRead returns body admitted to the cache when a caching policy
// is in force for the object and admits GETs (nil otherwise), and marks
// the answer a miss when one is in force. The caller closes what it
// returns (which aborts a fill the client did not read to the end).
func (p *Plane) admitOnRead(t Target, info storage.ObjectInfo, body io.Reader, outcome *obs.CacheOutcome) *fillingReader {
	set, ok := p.cacheFor(t, filter.MethodGet, info.Meta.Size, info.Meta)
	if !ok {
		return nil
	}
	*outcome = obs.CacheMiss
	if !set.AdmitGet {
		return nil
	}
	fill := p.cache.Admit(policyOf(set), info.Bucket, info.Key, info.Meta.Size)
	if fill == nil {
		return nil
	}
	return &fillingReader{rc: io.NopCloser(body), fill: fill, v: versionOf(info), p: p}
}
