package metrics

import "testing"

func TestGetOps(t *testing.T) {
	c := newTestCollector(GetOps())
	for _, op := range []string{"GetObject", "GetObject", "HeadObject", "PutObject", "ListObjectsV2"} {
		serve(t, c, req(op, "t1", "b1", "k"), nil)
	}
	flush(c, at(0))
	for range 6 {
		serve(t, c, req("GetObject", "t1", "b1", "k"), nil)
	}
	// Two seconds since the last flush: 6 reads make 3 per second.
	wantValues(t, flush(c, at(2))["get_ops"], map[string]float64{"tenant:t1": 3, "bucket:t1/b1": 3})
}

func TestGetOpsFirstPeriod(t *testing.T) {
	c := newTestCollector(GetOps())
	serve(t, c, req("GetObject", "t1", "b1", "k"), nil)
	serve(t, c, req("GetObject", "t1", "b1", "k"), nil)
	// The first flush counts over one period.
	wantValues(t, flush(c, at(1))["get_ops"], map[string]float64{"tenant:t1": 2, "bucket:t1/b1": 2})
}
