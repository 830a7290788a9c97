package metrics

import (
	"math"
	"testing"
	"time"
)

func TestLatencyP99(t *testing.T) {
	c := newTestCollector(LatencyP99())
	for range 99 {
		serve(t, c, latReq("GetObject", time.Millisecond), nil)
	}
	serve(t, c, latReq("GetObject", time.Second), nil)
	// The 99th of 100 is a 1 ms request.
	p99 := flush(c, at(1))["latency_p99"].Values["tenant:t1"]
	if math.Abs(p99-0.001) > 0.001/16 {
		t.Fatalf("p99 of 99×1ms + 1×1s = %v", p99)
	}
	for range 98 {
		serve(t, c, latReq("GetObject", time.Millisecond), nil)
	}
	serve(t, c, latReq("PutObject", time.Second), nil)
	serve(t, c, latReq("PutObject", time.Second), nil)
	p99 = flush(c, at(2))["latency_p99"].Values["tenant:t1"]
	if math.Abs(p99-1) > 1.0/16 {
		t.Fatalf("p99 of 98×1ms + 2×1s = %v", p99)
	}
	if info := LatencyP99().Info(); info.Merge != MergeMax {
		t.Fatalf("latency_p99 merges by %s", info.Merge)
	}
}
