package policy

import (
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/filter"
)

// A tenant's own filter (a WASM module it registered) is usable only in
// policies whose targets are all that tenant's; an administrator's filter
// (no owner) is everyone's.
func TestOwnedFilters(t *testing.T) {
	v := testVocab()
	reg, err := v.Filters.Extend(
		&filter.Info{Name: "mine", Version: 1, Kind: "wasm", Owner: "t1", Methods: []filter.Method{filter.MethodPut}, Stages: []filter.Stage{filter.StageGateway}},
		&filter.Info{Name: "market", Version: 1, Kind: "wasm", Methods: []filter.Method{filter.MethodPut}, Stages: []filter.Stage{filter.StageGateway}},
	)
	if err != nil {
		t.Fatal(err)
	}
	v.Filters = reg
	for _, ok := range []string{
		"FOR TENANT t1 DO SET mine",
		"FOR BUCKET t1/b1 DO SET mine",
		"FOR OBJECT t1/b1/k DO SET mine",
		"FOR TENANT t1, BUCKET t1/b2 DO SET mine",
		"FOR TENANT t1 DO DELETE mine",
		"FOR ALL DO SET market",
		"FOR TENANT t2 DO SET market",
	} {
		if _, err := ParseAndCheck("pol", ok, v); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for src, want := range map[string]string{
		"FOR TENANT t2 DO SET mine":                     "filter mine belongs to tenant t1; only policies whose targets are all t1's can use it, not TENANT t2",
		"FOR TENANT t1, TENANT t2 DO SET mine":          "not TENANT t2",
		"FOR ALL DO SET mine":                           "belongs to tenant t1",
		"FOR G:gold DO SET mine":                        "belongs to tenant t1",
		"FOR BUCKET b1 DO SET mine":                     "(write BUCKET t1/b1)",
		"FOR BUCKET t2/b1 DO SET compression, SET mine": "not BUCKET t2/b1",
	} {
		_, err := ParseAndCheck("pol", src, v)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", src, err, want)
		}
	}
}
