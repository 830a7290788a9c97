package policy

import (
	"github.com/facet-sds/facet/internal/block/bfilter"
	"github.com/facet-sds/facet/internal/filter"
)

// testFilters are filter descriptions shaped like Facet's built-in ones.
func testFilters() *filter.Registry {
	return filter.NewRegistry(
		&filter.Info{Name: "compression", Version: 1, Kind: "native", Reversible: true,
			Methods: []filter.Method{filter.MethodPut},
			Stages:  []filter.Stage{filter.StageGateway, filter.StageStorage},
			Params: []filter.ParamSpec{
				{Name: "engine", Type: filter.TypeEnum, Enum: []string{"gzip", "zstd", "lz4"}, Default: "zstd"},
				{Name: "level", Type: filter.TypeInt, Min: 1, Max: 22, Default: "3"},
				{Name: "frame", Type: filter.TypeSize, Min: 4096, Max: 64 << 20, Default: "1MiB"},
			}},
		&filter.Info{Name: "encryption", Version: 1, Kind: "native", Reversible: true,
			Methods: []filter.Method{filter.MethodPut},
			Stages:  []filter.Stage{filter.StageStorage, filter.StageGateway},
		},
		&filter.Info{Name: "caching", Version: 1, Kind: "native",
			Methods: []filter.Method{filter.MethodGet},
			Stages:  []filter.Stage{filter.StageGateway},
			Params: []filter.ParamSpec{
				{Name: "policy", Type: filter.TypeEnum, Enum: []string{"LRU", "LFU"}, Default: "LRU"},
				{Name: "ttl", Type: filter.TypeDuration, Min: 1, Max: 86400, Default: "10m"},
				{Name: "max", Type: filter.TypeSize},
				{Name: "hot", Type: filter.TypePercent, Min: 0, Max: 1},
				{Name: "ssd", Type: filter.TypeBool},
				{Name: "label", Type: filter.TypeString},
			}},
		&filter.Info{Name: "noop", Version: 1, Kind: "native",
			Methods: []filter.Method{filter.MethodPut, filter.MethodGet},
			Stages:  []filter.Stage{filter.StageGateway, filter.StageStorage}},
		&filter.Info{Name: "scanner", Version: 1, Kind: "wasm",
			Methods: []filter.Method{filter.MethodPut},
			Stages:  []filter.Stage{filter.StageGateway, filter.StageStorage}},
		&filter.Info{Name: "xor", Version: 1, Kind: "native", Reversible: true,
			Methods: []filter.Method{filter.MethodPut, filter.MethodGet},
			Stages:  []filter.Stage{filter.StageStorage}},
	)
}

func testVocab() *StaticVocabulary {
	return &StaticVocabulary{
		Filters:     testFilters(),
		Metrics:     DefaultMetrics(),
		ObjectTypes: DefaultObjectTypes(),
		Tenants:     []string{"t1", "t2", "t3", "T1", "acme"},
		Buckets:     []string{"t1/b1", "t1/b2", "t1/c1", "t2/b1", "t2/b2", "t3/b1", "T1/C1", "T1/C2", "acme/logs"},
		Groups:      []string{"1", "gold", "web"},
		Volumes:     []string{"v1", "v2"},
		Blocks:      testBlockFilters(),
	}
}

// testBlockFilters describes the built-in block filters as
// block.PolicyFilters does (block imports policy, so a test here cannot).
func testBlockFilters() *BlockFilters {
	var fs []BlockFilter
	for _, in := range bfilter.Builtin() {
		fs = append(fs, BlockFilter{Info: in.Describe(), Transparent: in.Transparent, Validate: in.Validate})
	}
	return NewBlockFilters(fs...)
}
