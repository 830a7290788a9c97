package native

import (
	"testing"

	"github.com/facet-sds/facet/internal/filter"
)

func TestCachingSettings(t *testing.T) {
	reg := testRegistry()
	for _, c := range []struct {
		p    filter.Params
		want filter.CacheSettings
	}{
		{nil, filter.CacheSettings{Size: 1 << 30, Evict: "lru", AdmitGet: true, AdmitPut: true}},
		{filter.Params{"size": "2097152", "policy": "lfu", "admit": "get"}, filter.CacheSettings{Size: 2 << 20, Evict: "lfu", AdmitGet: true}},
		{filter.Params{"admit": "put"}, filter.CacheSettings{Size: 1 << 30, Evict: "lru", AdmitPut: true}},
	} {
		f := newFilter(t, reg, "caching", c.p, filter.Env{}).(*Caching)
		if got := f.CacheSettings(); got != c.want {
			t.Errorf("%v: settings %+v, want %+v", c.p, got, c.want)
		}
	}
	in, _ := reg.Lookup("caching")
	for _, bad := range []filter.Params{{"policy": "mru"}, {"admit": "head"}, {"size": "1"}, {"ttl": "1s"}} {
		if _, err := in.New(bad, filter.Env{}); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// The filter is not a stream filter: PUT pipelines pass it by.
func TestCachingIsRequestOnly(t *testing.T) {
	f := newFilter(t, testRegistry(), "caching", nil, filter.Env{})
	if _, ok := f.(filter.RequestOnly); !ok {
		t.Fatal("caching is not RequestOnly")
	}
	if _, ok := f.(filter.Transformer); ok {
		t.Fatal("caching claims to transform PUT streams")
	}
}
