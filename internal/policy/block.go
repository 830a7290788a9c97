package policy

import (
	"fmt"
	"sort"
	"strings"

	"github.com/facet-sds/facet/internal/filter"
)

// BlockFilter is what the checker knows of a block filter. internal/block
// supplies them (block.PolicyFilters): policy names no block package, so
// it does not import the layer that imports it.
type BlockFilter struct {
	// Info describes the filter: its name, version and parameters.
	Info *filter.Info
	// Transparent filters leave the stored bytes as they are: a policy
	// with a metric trigger may set them.
	Transparent bool
	// Validate decodes and checks canonical parameters as the volume's
	// stack will be built from them; a *filter.ParamError points at one
	// parameter. nil accepts what the parameter specs accept.
	Validate func(filter.Params) error
}

// BlockFilters is the set of block filters volume policies are checked
// against, by name.
type BlockFilters struct{ byName map[string]BlockFilter }

// NewBlockFilters returns a set of fs; a name twice panics, as in the
// filter registry.
func NewBlockFilters(fs ...BlockFilter) *BlockFilters {
	b := &BlockFilters{byName: make(map[string]BlockFilter, len(fs))}
	for _, f := range fs {
		if _, dup := b.byName[f.Info.Name]; dup {
			panic(fmt.Sprintf("block filter %q registered twice", f.Info.Name))
		}
		b.byName[f.Info.Name] = f
	}
	return b
}

// Lookup returns the block filter named name.
func (b *BlockFilters) Lookup(name string) (BlockFilter, bool) {
	f, ok := b.byName[name]
	return f, ok
}

// Names lists the block filters in name order.
func (b *BlockFilters) Names() []string {
	out := make([]string, 0, len(b.byName))
	for n := range b.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// BlockFilterer is implemented by vocabularies with block filters; with
// none, volume policies may set only throttle.
type BlockFilterer interface {
	BlockFilters() *BlockFilters
}

func (c *checker) blockFilters() *BlockFilters {
	if bf, ok := c.v.(BlockFilterer); ok {
		if b := bf.BlockFilters(); b != nil {
			return b
		}
	}
	return NewBlockFilters()
}

// blockAction checks an action of a volume policy. Volumes have their
// own filters (offset-addressed, in place), never the object filters,
// even when a name is the same (encryption).
func (c *checker) blockAction(a *Action) {
	reg := c.blockFilters()
	bf, _, ok := lookupFold(a.Filter, reg.Lookup, reg.Names)
	if !ok {
		c.errorf(a.FilterPos, suggest(a.Filter, append(reg.Names(), string(SLOThrottle))), "unknown block filter %q (volumes take %v and throttle)", a.Filter, reg.Names())
	}
	in := bf.Info
	a.Info = in
	if a.StageWord != "" {
		c.errorf(a.StagePos, "", "block filter %s runs in the block stage: ON is not allowed", in.Name)
	}
	if a.Callable {
		c.errorf(a.CallPos, "", "block filter %s cannot be CALLABLE", in.Name)
	}
	if a.Verb == VerbDelete {
		c.deleteAction(a, in.Name)
		return
	}
	if c.p.Dynamic && !bf.Transparent {
		// A trigger that comes and goes would store some of a volume's
		// bytes through the filter and read them back without it.
		c.errorf(a.FilterPos, "", "block filter %s changes the stored bytes: a policy with a metric trigger may only set throttle or filters that leave the bytes as they are (%s)", in.Name, transparentNames(reg))
	}
	// A volume's stack runs next to its backing store: the table keeps
	// it in the storage list of ResolveVolume.
	a.Stage = filter.StageStorage
	a.Values = c.params(a, "block filter "+in.Name, in.Params)
	if bf.Validate != nil {
		c.paramFault(a, bf.Validate(a.Values))
	}
}

// metricTarget refuses a metric the policy's targets are never measured
// by: volume metrics come only for volumes, and volumes have no others.
func (c *checker) metricTarget(m *MetricCmp, name string) {
	switch vm := IsVolumeMetric(name); {
	case c.volumes && !vm:
		c.errorf(m.Pos, "", "metric %s is not measured for volumes: volume policies take volume_read_bw, volume_write_bw, volume_read_iops and volume_write_iops", name)
	case !c.volumes && vm:
		c.errorf(m.Pos, "", "metric %s is measured for volumes only: its targets are VOLUME or ALL VOLUMES", name)
	}
}

// blockOnlyHint explains an unknown object filter that is a block filter.
func (c *checker) blockOnlyHint(name string) string {
	reg := c.blockFilters()
	if _, n, ok := lookupFold(name, reg.Lookup, reg.Names); ok {
		return fmt.Sprintf(" (%s is a block filter: its targets are VOLUME or ALL VOLUMES)", n)
	}
	return ""
}

func transparentNames(reg *BlockFilters) string {
	var out []string
	for _, n := range reg.Names() {
		if f, _ := reg.Lookup(n); f.Transparent {
			out = append(out, n)
		}
	}
	return strings.Join(out, ", ")
}
