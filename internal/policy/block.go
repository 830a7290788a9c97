package policy

import (
	"fmt"
	"strings"

	"github.com/facet-sds/facet/internal/block/bfilter"
	"github.com/facet-sds/facet/internal/filter"
)

// BlockFilterer is implemented by vocabularies with block filters of
// their own; the others check volume policies against bfilter.Builtin.
type BlockFilterer interface {
	BlockFilters() *bfilter.Registry
}

func (c *checker) blockFilters() *bfilter.Registry {
	if bf, ok := c.v.(BlockFilterer); ok {
		return bf.BlockFilters()
	}
	return bfilter.NewRegistry(bfilter.Builtin()...)
}

// blockAction checks an action of a volume policy. Volumes have their
// own filters (offset-addressed, in place), never the object filters,
// even when a name is the same (encryption).
func (c *checker) blockAction(a *Action) {
	reg := c.blockFilters()
	in, _, ok := lookupFold(a.Filter, reg.Lookup, reg.Names)
	if !ok {
		c.errorf(a.FilterPos, suggest(a.Filter, append(reg.Names(), string(SLOThrottle))), "unknown block filter %q (volumes take %v and throttle)", a.Filter, reg.Names())
	}
	a.Info = in.Describe()
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
	if c.p.Dynamic && !in.Transparent {
		// A trigger that comes and goes would store some of a volume's
		// bytes through the filter and read them back without it.
		c.errorf(a.FilterPos, "", "block filter %s changes the stored bytes: a policy with a metric trigger may only set throttle or filters that leave the bytes as they are (%s)", in.Name, transparentNames(reg))
	}
	// A volume's stack runs next to its backing store: the table keeps
	// it in the storage list of ResolveVolume.
	a.Stage = filter.StageStorage
	a.Values = c.params(a, "block filter "+in.Name, in.Params)
	if in.Check != nil {
		if err := in.Check(a.Values); err != nil {
			c.errorf(a.FilterPos, "", "%s", err)
		}
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

func transparentNames(reg *bfilter.Registry) string {
	var out []string
	for _, n := range reg.Names() {
		if in, _ := reg.Lookup(n); in.Transparent {
			out = append(out, n)
		}
	}
	return strings.Join(out, ", ")
}
