package filter

import (
	"fmt"
)

// The caching filter keeps objects as clients see them (after their
// reverse filters) on the gateway's local fast disk, and serves GETs and
// Range GETs from there. The filter itself only carries its settings: the
// node's cache store (internal/filter/cache) does the work, driven by the
// S3 front end, because a hit must bypass the backend read altogether
// rather than transform its stream.
const (
	cachingName    = "caching"
	cachingVersion = 1
)

// CacheSettings are a caching filter instance's parameters.
type CacheSettings struct {
	// Size bounds the bytes this policy may keep on the node's disk.
	Size int64
	// Evict is "lru" or "lfu".
	Evict string
	// AdmitGet and AdmitPut say which requests fill the cache: a GET
	// that read the whole object, or a PUT's body.
	AdmitGet, AdmitPut bool
}

// Caching is a caching filter instance.
type Caching struct {
	info *Info
	set  CacheSettings
}

var _ RequestOnly = (*Caching)(nil)

func cachingInfo() *Info {
	in := &Info{
		Name:    cachingName,
		Version: cachingVersion,
		Kind:    "native",
		Methods: []Method{MethodGet, MethodPut},
		Stages:  []Stage{StageGateway},
		Doc: "Keeps objects as clients see them on the gateway's local disk (--cache-dir) and serves GETs and Range GETs " +
			"from there; every hit is checked against the object's current ETag, and every change is published on the bus.",
		Params: []ParamSpec{
			{Name: "size", Type: TypeSize, Default: "1073741824", Min: 1 << 20, Max: 1 << 50,
				Doc: "bytes this policy may keep on each gateway's cache disk"},
			{Name: "policy", Type: TypeEnum, Default: "lru", Enum: []string{"lru", "lfu"},
				Doc: "what to evict first: least recently or least frequently used"},
			{Name: "admit", Type: TypeEnum, Default: "both", Enum: []string{"get", "put", "both"},
				Doc: "which requests fill the cache: whole-object GETs, PUTs, or both"},
		},
	}
	in.New = func(p Params, _ Env) (Filter, error) {
		p, err := resolveParams(in, p)
		if err != nil {
			return nil, err
		}
		size, err := paramInt(p, "size")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cachingName, err)
		}
		admit := p["admit"]
		return &Caching{info: in, set: CacheSettings{
			Size: size, Evict: p["policy"],
			AdmitGet: admit == "get" || admit == "both",
			AdmitPut: admit == "put" || admit == "both",
		}}, nil
	}
	return in
}

// Info describes the filter.
func (c *Caching) Info() *Info { return c.info }

// CacheSettings returns the instance's settings.
func (c *Caching) CacheSettings() CacheSettings { return c.set }

// RequestOnly says the PUT stream is not the filter's: admission copies
// the client's bytes before any filter runs, so the cache never holds a
// transformed stream.
func (c *Caching) RequestOnly() {}
