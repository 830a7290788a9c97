package metrics

import "testing"

func TestOps(t *testing.T) {
	c := newTestCollector(Ops())
	serve(t, c, req("GetObject", "t1", "b1", "k"), nil)
	serve(t, c, req("PutObject", "t1", "b1", "k"), []byte("x"))
	serve(t, c, req("ListBuckets", "t1", "", ""), nil)
	serve(t, c, req("HeadBucket", "t2", "b2", ""), nil)
	wantValues(t, flush(c, at(1))["ops"], map[string]float64{
		"tenant:t1": 3, "bucket:t1/b1": 2, "tenant:t2": 1, "bucket:t2/b2": 1,
	})
	// The next period saw nothing: every target is left out.
	wantValues(t, flush(c, at(2))["ops"], map[string]float64{})
}
