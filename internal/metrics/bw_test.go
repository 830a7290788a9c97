package metrics

import "testing"

func TestBW(t *testing.T) {
	c := newTestCollector(BW())
	serve(t, c, req("PutObject", "t1", "b1", "k"), make([]byte, 300))
	o := req("GetObject", "t1", "b1", "k")
	o.BytesOut = 300
	serve(t, c, o, nil)
	o = req("ListBuckets", "t1", "", "")
	o.BytesOut = 100
	serve(t, c, o, nil)
	wantValues(t, flush(c, at(1))["bw"], map[string]float64{"tenant:t1": 700, "bucket:t1/b1": 600})
}
