package metrics

import "testing"

func TestErrors(t *testing.T) {
	c := newTestCollector(Errors())
	for _, st := range []int{200, 204, 304, 403, 404, 500, 501, 503} {
		o := req("GetObject", "t1", "b1", "k")
		o.Status = st
		if st == 501 {
			o.ErrCode = "NotImplemented"
		}
		serve(t, c, o, nil)
	}
	wantValues(t, flush(c, at(1))["errors"], map[string]float64{"tenant:t1": 2, "bucket:t1/b1": 2})
}
