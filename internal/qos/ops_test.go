package qos

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/controller"
)

// A tenant's operations cap is fleet-wide: the controller splits it over
// the gateways where the tenant has demand, like bytes. Hand-computed
// (Crystal, ops/s): t1 ops=30 per class; t1 get on a is refused
// operations (wants more), on b runs 4 ops/s (wants 5); unit weights 1/2
// each: λ=10 gives a 5 and b 5 (b satisfied), a takes the 20 left: a 25,
// b 5. t1 delete on a alone (2 ops/s) gets its whole cap, 30: deletes
// count in operations. t2 has no cap: nothing is assigned.
func TestOpsSplitAcrossGateways(t *testing.T) {
	f := NewFleet(time.Minute)
	f.Add(report("a", 0,
		FlowStatus{Tenant: "t1", Class: ClassGet, Streams: 1, Ops: 15, Rejected: 3, OpsRate: 15},
		FlowStatus{Tenant: "t1", Class: ClassDelete, Streams: 1, Ops: 2, OpsRate: 30},
		FlowStatus{Tenant: "t2", Class: ClassGet, Streams: 1, Ops: 50}))
	f.Add(report("b", 0,
		FlowStatus{Tenant: "t1", Class: ClassGet, Streams: 1, Ops: 4, OpsRate: 15}))
	slos := SLOMap{"t1": {Ops: 30}}
	b := NewBandwidth(BandwidthConfig{SLOs: func(context.Context) (SLOSource, error) { return slos, nil }})
	snap, _ := f.Snapshot(context.Background())
	as, mem, err := b.Reconcile(context.Background(), snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, a := range as {
		if a.Key == "get_ops" || a.Key == "delete_ops" {
			got[a.Node+"/"+a.Target+"/"+a.Key] = a.Value
		}
	}
	want := map[string]float64{"a/tenant:t1/get_ops": 25, "b/tenant:t1/get_ops": 5, "a/tenant:t1/delete_ops": 30}
	if len(got) != len(want) {
		t.Fatalf("ops assignments %v, want %v", got, want)
	}
	for k, w := range want {
		if math.Abs(got[k]-w) > 0.5 {
			t.Errorf("%s = %v, want %v", k, got[k], w)
		}
	}
	// Gateway b applies its share: t1's GETs there are admitted at 5/s
	// (the static rate before was the whole cap, 30/s, on every gateway).
	l := NewLimiter(LimiterConfig{Node: "b", SLOs: slos})
	st, err := l.Admit(context.Background(), "t1", ClassGet)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Done()
	if r := st.f.ops.Rate(); r != 30 {
		t.Fatalf("static ops rate %v, want the cap 30", r)
	}
	data, _ := json.Marshal(controller.AssignmentMessage{V: controller.AssignmentVersion, Instance: "i", Seq: 1, Assignments: as})
	_, _, rates, ops, err := DecodeAllAssignments(data, "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rates["t1"][ClassGet]; ok {
		t.Fatalf("an operations rate decoded as bytes: %v", rates)
	}
	l.ApplyOps("i", 1, rates, ops)
	if r := st.f.ops.Rate(); math.Abs(r-5) > 0.5 {
		t.Fatalf("assigned ops rate on b %v, want 5", r)
	}
	// A repeat within the threshold publishes the same rates.
	as2, _, _ := b.Reconcile(context.Background(), snap, mem)
	for _, a := range as2 {
		if k := a.Node + "/" + a.Target + "/" + a.Key; want[k] != 0 && a.Value != got[k] {
			t.Errorf("%s moved to %v", k, a.Value)
		}
	}
}

// A cap lowered or removed on a gateway applies there at once, whatever
// the controller assigned before.
func TestOpsCapChangeAppliesAtOnce(t *testing.T) {
	slos := SLOMap{"t1": {Ops: 30}}
	l := NewLimiter(LimiterConfig{Node: "b", SLOs: slos})
	st, err := l.Admit(context.Background(), "t1", ClassGet)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Done()
	l.ApplyOps("i", 1, nil, Rates{"t1": {ClassGet: 20}})
	if r := st.f.ops.Rate(); r != 20 {
		t.Fatalf("assigned %v, want 20", r)
	}
	slos["t1"] = SLO{Ops: 5}
	l.Refresh()
	if r := st.f.ops.Rate(); r != 5 {
		t.Fatalf("after the cap was lowered to 5: %v", r)
	}
	delete(slos, "t1")
	l.Refresh()
	if r := st.f.ops.Rate(); !math.IsInf(r, 1) {
		t.Fatalf("after the cap was removed: %v, want unlimited", r)
	}
}
