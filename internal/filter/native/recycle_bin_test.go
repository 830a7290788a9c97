package native

import (
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/filter"
)

func TestRecycleBinKeepFor(t *testing.T) {
	reg := testRegistry()
	if d := newFilter(t, reg, "recycle_bin", nil, filter.Env{}).(*RecycleBin).KeepFor(); d != 30*24*time.Hour {
		t.Fatalf("default max_time %v, want 30 days", d)
	}
	if d := newFilter(t, reg, "recycle_bin", filter.Params{"max_time": "1h0m0s"}, filter.Env{}).(*RecycleBin).KeepFor(); d != time.Hour {
		t.Fatalf("max_time %v", d)
	}
	in, _ := reg.Lookup("recycle_bin")
	if in.Methods[0] != filter.MethodDelete || len(in.Methods) != 1 {
		t.Fatalf("methods %v", in.Methods)
	}
	for _, bad := range []filter.Params{{"max_time": "0s"}, {"max_time": "soon"}} {
		if _, err := in.New(bad, filter.Env{}); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
