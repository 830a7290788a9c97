package metrics

import "testing"

func TestListOps(t *testing.T) {
	c := newTestCollector(ListOps())
	serve(t, c, req("ListBuckets", "t1", "", ""), nil)
	for _, op := range []string{"ListObjects", "ListObjectsV2", "ListMultipartUploads", "ListParts", "GetObject"} {
		serve(t, c, req(op, "t1", "b1", ""), nil)
	}
	wantValues(t, flush(c, at(1))["list_ops"], map[string]float64{"tenant:t1": 5, "bucket:t1/b1": 4})
}
