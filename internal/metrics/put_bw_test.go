package metrics

import "testing"

func TestPutBW(t *testing.T) {
	c := newTestCollector(PutBW())
	serve(t, c, req("PutObject", "t1", "b1", "k"), make([]byte, 3000))
	serve(t, c, req("PutObject", "t1", "b2", "k"), make([]byte, 1000))
	serve(t, c, req("PutObject", "t1", "b2", "empty"), []byte{})
	o := req("GetObject", "t1", "b1", "k")
	o.BytesOut = 99
	serve(t, c, o, nil)
	wantValues(t, flush(c, at(1))["put_bw"], map[string]float64{"tenant:t1": 4000, "bucket:t1/b1": 3000, "bucket:t1/b2": 1000})
}
