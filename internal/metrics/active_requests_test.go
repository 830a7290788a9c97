package metrics

import (
	"testing"

	"github.com/facet-sds/facet/internal/obs"
)

func TestActiveRequests(t *testing.T) {
	c := newTestCollector(ActiveRequests())
	var open []*obs.Observation
	for _, b := range []string{"b1", "b1", "b2"} {
		o := req("PutObject", "t1", b, "k")
		o.Routed = true
		c.Started(o)
		open = append(open, o)
	}
	serve(t, c, req("GetObject", "t1", "b1", "k"), nil)
	wantValues(t, flush(c, at(1))["active_requests"], map[string]float64{"tenant:t1": 3, "bucket:t1/b1": 2, "bucket:t1/b2": 1})
	c.Done(open[0])
	wantValues(t, flush(c, at(2))["active_requests"], map[string]float64{"tenant:t1": 2, "bucket:t1/b1": 1, "bucket:t1/b2": 1})
	c.Done(open[1])
	c.Done(open[2])
	wantValues(t, flush(c, at(3))["active_requests"], map[string]float64{})
	// A request refused before routing is told to Done only: it must not
	// move the gauge.
	refused := req("GetObject", "t1", "b1", "k")
	c.Done(refused)
	wantValues(t, flush(c, at(4))["active_requests"], map[string]float64{})
}
