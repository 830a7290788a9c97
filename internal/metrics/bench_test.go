package metrics

import (
	"fmt"
	"testing"
)

// The per-request cost of every built-in metric: what a GET (no payload)
// adds to the data path, sequentially and from parallel requests of a
// few tenants.
func BenchmarkCollectorGet(b *testing.B) {
	c := NewCollector(CollectorConfig{Node: "n1"})
	b.ReportAllocs()
	for b.Loop() {
		serve(b, c, req("GetObject", "t1", "b1", "k"), nil)
	}
}

func BenchmarkCollectorGetParallel(b *testing.B) {
	c := NewCollector(CollectorConfig{Node: "n1"})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			serve(b, c, req("GetObject", fmt.Sprint("t", i%4), "b1", "k"), nil)
		}
	})
}

func BenchmarkCollectorPut4KiB(b *testing.B) {
	c := NewCollector(CollectorConfig{Node: "n1"})
	p := textPayload(4096)
	b.ReportAllocs()
	for b.Loop() {
		serve(b, c, req("PutObject", "t1", "b1", "k"), p)
	}
}

// The baseline: the same requests through no observer.
func BenchmarkNoCollectorPut4KiB(b *testing.B) {
	p := textPayload(4096)
	var n int64
	b.ReportAllocs()
	for b.Loop() {
		o := req("PutObject", "t1", "b1", "k")
		n += int64(len(p))
		o.BytesIn = n
	}
}
