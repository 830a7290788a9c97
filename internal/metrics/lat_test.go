package metrics

import (
	"testing"
	"time"
)

func TestLat(t *testing.T) {
	c := newTestCollector(Lat())
	serve(t, c, latReq("PutObject", 100*time.Millisecond), nil)
	serve(t, c, latReq("GetObject", 200*time.Millisecond), nil)
	serve(t, c, latReq("ListObjectsV2", 600*time.Millisecond), nil)
	s := flush(c, at(1))["lat"]
	wantValues(t, s, map[string]float64{"tenant:t1": 0.3, "bucket:t1/b1": 0.3})
	if s.Weights["bucket:t1/b1"] != 3 {
		t.Fatalf("weights %v", s.Weights)
	}
	// A period without requests has no mean, not a mean of 0 seconds.
	if s := flush(c, at(2))["lat"]; len(s.Values) != 0 || len(s.Weights) != 0 {
		t.Fatalf("idle period: %+v", s)
	}
}
