package native

import (
	"github.com/facet-sds/facet/internal/filter"
)

// The caching filter keeps objects as clients see them (after their
// reverse filters) on the gateway's local fast disk, and serves GETs and
// Range GETs from there. The filter itself only carries its settings: the
// node's cache store (internal/filter/cache) does the work, driven by the
// data plane (internal/dataplane), because a hit must bypass the backend read altogether
// rather than transform its stream.
const (
	cachingName    = "caching"
	cachingVersion = 1
)

// Caching is a caching filter instance.
type Caching struct {
	info *filter.Info
	set  filter.CacheSettings
}

var _ filter.RequestOnly = (*Caching)(nil)

func CachingInfo() *filter.Info {
	in := &filter.Info{
		Name:    cachingName,
		Version: cachingVersion,
		Kind:    "native",
		Methods: []filter.Method{filter.MethodGet, filter.MethodPut},
		Stages:  []filter.Stage{filter.StageGateway},
		Doc: "Keeps objects as clients see them on the gateway's local disk (--cache-dir) and serves GETs and Range GETs " +
			"from there; every hit is checked against the object's current ETag, and every change is published on the bus.",
		Params: []filter.ParamSpec{
			{Name: "size", Type: filter.TypeSize, Default: "1073741824", Min: 1 << 20, Max: 1 << 50,
				Doc: "bytes this policy may keep on each gateway's cache disk"},
			{Name: "policy", Type: filter.TypeEnum, Default: "lru", Enum: []string{"lru", "lfu"},
				Doc: "what to evict first: least recently or least frequently used"},
			{Name: "admit", Type: filter.TypeEnum, Default: "both", Enum: []string{"get", "put", "both"},
				Doc: "which requests fill the cache: whole-object GETs, PUTs, or both"},
		},
	}
	in.Config = func() filter.Provisioner { return &cachingConfig{info: in} }
	return in
}

// cachingConfig is the caching filter's parameters, decoded. Their specs
// say every constraint: it needs no Validate.
type cachingConfig struct {
	Size   int64  `param:"size"`
	Policy string `param:"policy"`
	Admit  string `param:"admit"`

	info *filter.Info
}

var _ filter.Provisioner = (*cachingConfig)(nil)

func (c *cachingConfig) Provision(filter.Env) (filter.Filter, error) {
	return &Caching{info: c.info, set: filter.CacheSettings{
		Size: c.Size, Evict: c.Policy,
		AdmitGet: c.Admit == "get" || c.Admit == "both",
		AdmitPut: c.Admit == "put" || c.Admit == "both",
	}}, nil
}

// Info describes the filter.
func (c *Caching) Info() *filter.Info { return c.info }

// CacheSettings returns the instance's settings.
func (c *Caching) CacheSettings() filter.CacheSettings { return c.set }

// RequestOnly says the PUT stream is not the filter's: admission copies
// the client's bytes before any filter runs, so the cache never holds a
// transformed stream.
func (c *Caching) RequestOnly() {}
