// Package builtin owns the one explicit list of the filters this binary
// ships: the native ones (internal/filter/native) and the select filter
// (internal/s3select/selectfilter). Only the wiring imports it, so the
// filter contract and its consumers do not link the implementations.
package builtin

import (
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/filter/native"
	"github.com/facet-sds/facet/internal/s3select/selectfilter"
)

// Filters returns fresh descriptions of the built-in filters. Each call
// returns new values, so registries built from separate calls share no
// state (their codec pools included).
func Filters() []*filter.Info {
	return []*filter.Info{
		native.NoopInfo(),
		native.CompressionInfo(),
		native.EncryptionInfo(),
		native.CachingInfo(),
		native.TaggingInfo(),
		native.MetadataGuardInfo(),
		native.RecycleBinInfo(),
		selectfilter.Info(),
	}
}

// NewRegistry returns a registry holding the built-in filters.
func NewRegistry() *filter.Registry {
	return filter.NewRegistry(Filters()...)
}
