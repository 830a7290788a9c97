package native

import (
	"time"

	"github.com/facet-sds/facet/internal/filter"
)

// The recycle bin keeps deleted objects for max_time in a hidden area of
// their tenant, from where the tenant or an administrator can restore them
// (facet ctl trash). Like caching, the filter carries its settings; the
// trash store (internal/filter/trash) moves the bytes.
const (
	recycleBinName    = "recycle_bin"
	recycleBinVersion = 1
)

// RecycleBin is a recycle_bin instance.
type RecycleBin struct {
	info   *filter.Info
	maxAge time.Duration
}

func RecycleBinInfo() *filter.Info {
	in := &filter.Info{
		Name:    recycleBinName,
		Version: recycleBinVersion,
		Kind:    "native",
		Methods: []filter.Method{filter.MethodDelete},
		Stages:  []filter.Stage{filter.StageGateway},
		Doc: "On DELETE, keeps the object (its stored bytes and metadata, reverse plan included) for max_time in a hidden area " +
			"of its tenant, not listable through S3; `facet ctl trash list|restore|purge` and /v1/trash manage it.",
		Params: []filter.ParamSpec{
			{Name: "max_time", Type: filter.TypeDuration, Default: "720h", Min: 1, Max: 10 * 365 * 24 * 3600,
				Doc: "how long a deleted object is kept before the background purge removes it"},
		},
	}
	in.Config = func() filter.Provisioner { return &recycleBinConfig{info: in} }
	return in
}

// recycleBinConfig is the recycle bin's parameters, decoded.
type recycleBinConfig struct {
	MaxTime time.Duration `param:"max_time"`

	info *filter.Info
}

var (
	_ filter.Validator   = (*recycleBinConfig)(nil)
	_ filter.Provisioner = (*recycleBinConfig)(nil)
)

func (c *recycleBinConfig) Validate() error {
	if c.MaxTime <= 0 {
		return filter.Invalid("max_time", "max_time=%q: want a positive duration", c.MaxTime.String())
	}
	return nil
}

func (c *recycleBinConfig) Provision(filter.Env) (filter.Filter, error) {
	return &RecycleBin{info: c.info, maxAge: c.MaxTime}, nil
}

// Info describes the filter.
func (r *RecycleBin) Info() *filter.Info { return r.info }

// RequestOnly says the filter acts on DELETE requests, never on a stream.
func (r *RecycleBin) RequestOnly() {}

// KeepFor is how long a deleted object stays in the bin.
func (r *RecycleBin) KeepFor() time.Duration { return r.maxAge }
