package metrics

import (
	"testing"
	"time"
)

func TestPutLat(t *testing.T) {
	c := newTestCollector(PutLat())
	serve(t, c, latReq("PutObject", 100*time.Millisecond), nil)
	serve(t, c, latReq("UploadPart", 300*time.Millisecond), nil)
	serve(t, c, latReq("GetObject", time.Second), nil)
	s := flush(c, at(1))["put_lat"]
	wantValues(t, s, map[string]float64{"tenant:t1": 0.2, "bucket:t1/b1": 0.2})
}
