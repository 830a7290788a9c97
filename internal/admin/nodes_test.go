package admin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

type fixedCache NodeCache

func (c fixedCache) CacheStatus() NodeCache { return NodeCache(c) }

// A node with an object cache reports it in GET /nodes; one without
// leaves the field out.
func TestLocalNodeReportsItsCache(t *testing.T) {
	want := NodeCache{Entries: 3, Bytes: 3 << 20, Hits: 9, Misses: 1, HitRatio: 0.9, ServedBytes: 9 << 20, Evictions: 2, BusConnected: true}
	ns, err := LocalNode("n1", nil, fixedCache(want)).Nodes(context.Background())
	if err != nil || len(ns) != 1 || ns[0].Cache == nil || *ns[0].Cache != want {
		t.Fatalf("%+v, %v", ns, err)
	}
	data, _ := json.Marshal(ns[0])
	for _, k := range []string{`"hit_ratio":0.9`, `"served_bytes":9437184`, `"evictions":2`} {
		if !strings.Contains(string(data), k) {
			t.Errorf("%s lacks %s", data, k)
		}
	}
	ns, err = LocalNode("n1", nil, nil).Nodes(context.Background())
	if err != nil || ns[0].Cache != nil {
		t.Fatalf("%+v, %v", ns, err)
	}
	if data, _ := json.Marshal(ns[0]); strings.Contains(string(data), `"cache"`) {
		t.Errorf("a node without a cache reports one: %s", data)
	}
}
