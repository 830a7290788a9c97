package metrics

import "testing"

func TestErrorRatio(t *testing.T) {
	c := newTestCollector(ErrorRatio())
	for _, st := range []int{200, 404, 500, 200} {
		o := req("GetObject", "t1", "b1", "k")
		o.Status = st
		serve(t, c, o, nil)
	}
	o := req("GetObject", "t1", "b2", "k")
	o.Status = 200
	serve(t, c, o, nil)
	s := flush(c, at(1))["error_ratio"]
	wantValues(t, s, map[string]float64{"tenant:t1": 0.2, "bucket:t1/b1": 0.25, "bucket:t1/b2": 0})
	if s.Weights["tenant:t1"] != 5 || s.Weights["bucket:t1/b2"] != 1 {
		t.Fatalf("weights %v", s.Weights)
	}
}
