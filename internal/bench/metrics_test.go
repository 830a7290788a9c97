package bench

import (
	"io"
	"testing"
)

// The traffic benchmark counts what the model counts: per period, each
// node's sample of each metric in and out (to the aggregator), each
// metric's aggregate in, and each watched target's value in and out.
func TestBusTrafficCounts(t *testing.T) {
	ts, err := RunBusTraffic(t.Context(), []TrafficConfig{{Metrics: 2, Nodes: 3, Controllers: 1, Targets: 1}}, 3, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	tr := ts[0]
	const w, n, c = 2, 3, 1
	if tr.InMsgs != n*w+w+c*w || tr.OutMsgs != n*w+c*w {
		t.Fatalf("messages per period: in %v, out %v", tr.InMsgs, tr.OutMsgs)
	}
	if tr.NodeMsgBytes < 80 || tr.InBytes < tr.NodeMsgBytes*n*w || tr.ModelBytes != w*CrystalEventBytes*(2*n+c) {
		t.Fatalf("bytes: %+v", tr)
	}
}
