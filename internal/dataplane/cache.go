package dataplane

import (
	"context"
	"io"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/filter/cache"
	"github.com/facet-sds/facet/internal/obs"
	"github.com/facet-sds/facet/internal/storage"
)

// The object cache under caching policies: a GET reads from it when it
// holds exactly the version the GET's metadata read found, and a GET that
// read a whole object or a PUT's body fills it (package cache says why
// that is coherent).

type cacher interface {
	CacheSettings() filter.CacheSettings
}

// cacheFor returns the caching settings in force, if any.
func (p *Plane) cacheFor(t Target, method filter.Method, size int64, obj storage.ObjectMeta) (filter.CacheSettings, bool) {
	if p.cache == nil {
		return filter.CacheSettings{}, false
	}
	for _, st := range p.requestSteps(t, method, size, obj) {
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
// GET's metadata read found, else from the backend, admitting a
// whole-object read on the way. outcome is set when a caching policy is
// in force.
func (p *Plane) openCached(ctx context.Context, t Target, info storage.ObjectInfo, rng *storage.Range, outcome *obs.CacheOutcome) (io.ReadCloser, error) {
	set, ok := p.cacheFor(t, filter.MethodGet, info.Meta.Size, info.Meta)
	if !ok {
		return p.openLogical(ctx, t, p.backend, info, rng)
	}
	off, n := int64(0), info.Meta.Size
	if rng != nil {
		off, n = rng.Start, rng.Length
	}
	if rc, hit := p.cache.Open(info.Bucket, info.Key, versionOf(info), off, n); hit {
		*outcome = obs.CacheHit
		return rc, nil
	}
	*outcome = obs.CacheMiss
	rc, err := p.openLogical(ctx, t, p.backend, info, rng)
	if err != nil || rng != nil || !set.AdmitGet {
		return rc, err
	}
	fill := p.cache.Admit(policyOf(set), info.Bucket, info.Key, info.Meta.Size)
	if fill == nil {
		return rc, nil
	}
	return &fillingReader{rc: rc, fill: fill, v: versionOf(info), p: p}, nil
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
	p    *Plane
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
			fill, v, log := f.fill, f.v, f.p.log
			f.p.goBackground(func() {
				if cerr := fill.Commit(v); cerr != nil {
					log.Warn("cache fill not committed", "err", cerr)
				}
			})
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

// openLogical opens bytes [off, off+n) of what the client wrote, reading
// the stored bytes from b and undoing the object's recorded filters when
// it has any.
func (p *Plane) openLogical(ctx context.Context, t Target, b storage.Backend, info storage.ObjectInfo, rng *storage.Range) (io.ReadCloser, error) {
	if !Transformed(info.Meta) {
		rc, got, err := b.GetObject(ctx, info.Bucket, info.Key, rng)
		if err != nil {
			return nil, err
		}
		if got.Meta.ETag != info.Meta.ETag || !got.LastModified.Equal(info.LastModified) {
			rc.Close()
			return nil, ErrChanged
		}
		return rc, nil
	}
	src, err := p.decoders.Logical(ctx, t.filterRequest(filter.MethodGet, info.Meta.Size, info.Meta), b, info)
	if err != nil {
		return nil, err
	}
	off, n := int64(0), src.Size()
	if rng != nil {
		off, n = rng.Start, rng.Length
	}
	return src.Open(ctx, off, n)
}
