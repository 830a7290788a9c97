package metrics

import "testing"

func TestDeleteOps(t *testing.T) {
	c := newTestCollector(DeleteOps())
	for _, op := range []string{"DeleteObject", "DeleteObjects", "DeleteBucket", "AbortMultipartUpload", "GetObject"} {
		serve(t, c, req(op, "t1", "b1", "k"), nil)
	}
	wantValues(t, flush(c, at(1))["delete_ops"], map[string]float64{"tenant:t1": 2, "bucket:t1/b1": 2})
}
