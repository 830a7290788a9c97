package metrics

import "testing"

func TestHeadOps(t *testing.T) {
	c := newTestCollector(HeadOps())
	for _, op := range []string{"HeadObject", "HeadBucket", "GetObject"} {
		serve(t, c, req(op, "t1", "b1", "k"), nil)
	}
	wantValues(t, flush(c, at(1))["head_ops"], map[string]float64{"tenant:t1": 2, "bucket:t1/b1": 2})
}
