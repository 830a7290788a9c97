package metrics

import (
	"github.com/facet-sds/facet/internal/obs"
	"testing"
	"time"
)

// latReq is a request that took d.
func latReq(op string, d time.Duration) *obs.Observation {
	o := req(op, "t1", "b1", "k")
	o.Duration = d
	return o
}

func TestGetLat(t *testing.T) {
	c := newTestCollector(GetLat())
	serve(t, c, latReq("GetObject", 10*time.Millisecond), nil)
	serve(t, c, latReq("GetObject", 30*time.Millisecond), nil)
	serve(t, c, latReq("PutObject", time.Second), nil)
	s := flush(c, at(1))["get_lat"]
	wantValues(t, s, map[string]float64{"tenant:t1": 0.02, "bucket:t1/b1": 0.02})
	// Nodes merge means by request count.
	if s.Weights["tenant:t1"] != 2 {
		t.Fatalf("weights %v", s.Weights)
	}
}
