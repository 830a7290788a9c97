package filter

import (
	"testing"
)

func TestCachingSettings(t *testing.T) {
	reg := NewBuiltinRegistry()
	for _, c := range []struct {
		p    Params
		want CacheSettings
	}{
		{nil, CacheSettings{Size: 1 << 30, Evict: "lru", AdmitGet: true, AdmitPut: true}},
		{Params{"size": "2097152", "policy": "lfu", "admit": "get"}, CacheSettings{Size: 2 << 20, Evict: "lfu", AdmitGet: true}},
		{Params{"admit": "put"}, CacheSettings{Size: 1 << 30, Evict: "lru", AdmitPut: true}},
	} {
		f := newFilter(t, reg, "caching", c.p, Env{}).(*Caching)
		if got := f.CacheSettings(); got != c.want {
			t.Errorf("%v: settings %+v, want %+v", c.p, got, c.want)
		}
	}
	in, _ := reg.Lookup("caching")
	for _, bad := range []Params{{"policy": "mru"}, {"admit": "head"}, {"size": "1"}, {"ttl": "1s"}} {
		if _, err := in.New(bad, Env{}); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// The filter is not a stream filter: PUT pipelines pass it by.
func TestCachingIsRequestOnly(t *testing.T) {
	f := newFilter(t, NewBuiltinRegistry(), "caching", nil, Env{})
	if _, ok := f.(RequestOnly); !ok {
		t.Fatal("caching is not RequestOnly")
	}
	if _, ok := f.(Transformer); ok {
		t.Fatal("caching claims to transform PUT streams")
	}
}
