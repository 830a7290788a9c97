package block

import (
	"github.com/facet-sds/facet/internal/block/bfilter"
	"github.com/facet-sds/facet/internal/policy"
)

// PolicyFilters describes the block filters of reg (the built-in list
// when nil) to the policy checker, which does not import this layer: it
// validates volume policies' parameters as the stacks will be built from
// them.
func PolicyFilters(reg *bfilter.Registry) *policy.BlockFilters {
	if reg == nil {
		reg = bfilter.NewRegistry(bfilter.Builtin()...)
	}
	var fs []policy.BlockFilter
	for _, n := range reg.Names() {
		in, _ := reg.Lookup(n)
		fs = append(fs, policy.BlockFilter{Info: in.Describe(), Transparent: in.Transparent, Validate: in.Validate})
	}
	return policy.NewBlockFilters(fs...)
}
