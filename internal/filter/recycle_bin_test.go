package filter

import (
	"testing"
	"time"
)

func TestRecycleBinKeepFor(t *testing.T) {
	reg := NewBuiltinRegistry()
	if d := newFilter(t, reg, "recycle_bin", nil, Env{}).(*RecycleBin).KeepFor(); d != 30*24*time.Hour {
		t.Fatalf("default max_time %v, want 30 days", d)
	}
	if d := newFilter(t, reg, "recycle_bin", Params{"max_time": "1h0m0s"}, Env{}).(*RecycleBin).KeepFor(); d != time.Hour {
		t.Fatalf("max_time %v", d)
	}
	in, _ := reg.Lookup("recycle_bin")
	if in.Methods[0] != MethodDelete || len(in.Methods) != 1 {
		t.Fatalf("methods %v", in.Methods)
	}
	for _, bad := range []Params{{"max_time": "0s"}, {"max_time": "soon"}} {
		if _, err := in.New(bad, Env{}); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
