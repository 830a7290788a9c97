package metrics

import "testing"

func TestGetBW(t *testing.T) {
	c := newTestCollector(GetBW())
	for _, n := range []int64{1000, 500} {
		o := req("GetObject", "t1", "b1", "k")
		o.BytesOut = n
		serve(t, c, o, nil)
	}
	o := req("ListObjectsV2", "t1", "b1", "")
	o.BytesOut = 4000 // a listing's XML is not object data
	serve(t, c, o, nil)
	flush(c, at(0))
	for _, n := range []int64{1000, 500} {
		o := req("GetObject", "t1", "b1", "k")
		o.BytesOut = n
		serve(t, c, o, nil)
	}
	wantValues(t, flush(c, at(2))["get_bw"], map[string]float64{"tenant:t1": 750, "bucket:t1/b1": 750})
}
