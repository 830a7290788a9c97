package metrics

import "testing"

func TestPutOps(t *testing.T) {
	c := newTestCollector(PutOps())
	for _, op := range []string{"PutObject", "UploadPart", "CopyObject", "UploadPartCopy", "GetObject", "CreateMultipartUpload", "CompleteMultipartUpload"} {
		serve(t, c, req(op, "t1", "b1", "k"), nil)
	}
	serve(t, c, req("PutObject", "t2", "b1", "k"), nil)
	wantValues(t, flush(c, at(1))["put_ops"], map[string]float64{
		"tenant:t1": 4, "bucket:t1/b1": 4, "tenant:t2": 1, "bucket:t2/b1": 1,
	})
}
