package qos

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/controller"
)

func TestParseContextClass(t *testing.T) {
	for s, ok := range map[string]bool{"get": true, "ctx:compaction": true, "ctx:low_level.l0-1": true,
		"ctx:": false, "ctx:Bad": false, "ctx:_x": false, "compaction": false, "ctx:a b": false} {
		c, err := ParseClass(s)
		if (err == nil) != ok || ok && string(c) != s {
			t.Errorf("ParseClass(%q) = %q, %v", s, c, err)
		}
	}
	if name, ok := ContextClass("flush").Context(); !ok || name != "flush" {
		t.Fatalf("Context() = %q %v", name, ok)
	}
	if _, ok := ClassGet.Context(); ok {
		t.Fatal("get is not a context class")
	}
}

// Context classes are flows of their own in the global allocation: a
// class's limit is fleet-wide (split over the nodes where the class has
// demand), its reservation is kept, and it shares node capacity with the
// tenants' operation classes. Hand-computed (MB/s, Crystal):
//
//	nodes a, b of 10; t1 compaction limit 4 on a and b (1 stream each);
//	t1 flush reservation 6 on a; t2 get (no SLO) on a and b.
//	(a) flush reserves 6 on a. (c) weighted max-min, unit weights 1/2 for
//	the two-node groups and 1 for flush: a's room 4 fills at λ=2
//	(compaction a 1, flush +2, t2 a 1; compaction b 1, t2 b 1); then
//	compaction's 2 left go at λ=4 on b with t2 (compaction b 3, t2 b 3);
//	then t2 takes b's last 4 (t2 b 7).
func TestAllocationWithClasses(t *testing.T) {
	comp, flush := ContextClass("compaction"), ContextClass("flush")
	slos := ClassSLOs{Tenants: SLOMap{"t1": {Get: 9}}, Classes: map[string]SLO{
		"t1/compaction": {Limit: 4},
		"t1/flush":      {Reservation: 6},
	}}
	p := Problem{Capacity: map[string]float64{"a": 10, "b": 10}, SLOs: slos, Demands: []Demand{
		d("t1", comp, "a", 1, inf), d("t1", comp, "b", 1, inf), d("t1", flush, "a", 1, inf),
		d("t2", ClassGet, "a", 1, inf), d("t2", ClassGet, "b", 1, inf)}}
	// Fleet-wide: flush reserves 6; the spare goes to compaction (up to
	// its limit 4), flush (6+x) and t2 (x). Flush only uses a, less the
	// others' minimums there (5% of 10 each): it stops at 9 (x = 3);
	// compaction reaches its limit, t2 takes the rest: 4 and 7, each at
	// its minimum on a.
	checkAlloc(t, Crystal{}.Allocate(p), map[UnitKey]float64{
		k("t1", comp, "a"): 0.5, k("t1", comp, "b"): 3.5, k("t1", flush, "a"): 9,
		k("t2", ClassGet, "a"): 0.5, k("t2", ClassGet, "b"): 6.5,
	})
	// The tenant's own SLO (get 9) is not the class's: a class without a
	// policy has no reservation and no limit.
	if s := SLOOf(slos, "t1", ContextClass("other")); !s.IsZero() {
		t.Fatalf("class without a policy: %+v", s)
	}
	if r := SLOOf(slos, "t1", flush).ReservationOf(flush); r != 6 {
		t.Fatalf("flush reservation %v", r)
	}
	// Max-min honours the class limit as well.
	mm := MaxMin{}.Allocate(p)
	if s := mm[k("t1", comp, "a")] + mm[k("t1", comp, "b")]; math.Abs(s-4) > 1e-6 {
		t.Fatalf("max-min: compaction gets %v in all, over its limit 4: %v", s, mm)
	}
}

// The controller reads context class flows from the nodes' reports and
// assigns them per node; each gateway decodes its own share by class.
func TestControllerAssignsClassesPerNode(t *testing.T) {
	comp := ContextClass("low_level")
	f := NewFleet(time.Minute)
	f.Add(report("gw-a", 10e6,
		FlowStatus{Tenant: "t1", Class: comp, Streams: 1, Served: 3e6, Waited: 0.4},
		FlowStatus{Tenant: "t1", Class: ClassGet, Streams: 1, Served: 3e6, Waited: 0.4}))
	f.Add(report("gw-b", 10e6,
		FlowStatus{Tenant: "t1", Class: comp, Streams: 3, Served: 3e6, Waited: 0.4}))
	b := NewBandwidth(BandwidthConfig{SLOs: func(context.Context) (SLOSource, error) {
		return ClassSLOs{Classes: map[string]SLO{"t1/low_level": {Limit: 8e6}}}, nil
	}})
	snap, _ := f.Snapshot(context.Background())
	as, _, err := b.Reconcile(context.Background(), snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(controller.AssignmentMessage{V: controller.AssignmentVersion, Instance: "i", Seq: 1, Assignments: as})
	var sum float64
	for _, node := range []string{"gw-a", "gw-b"} {
		_, _, rates, err := DecodeAssignments(data, node)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := rates["t1"][comp]
		if !ok || r <= 0 {
			t.Fatalf("%s: no rate for %s: %v (%v)", node, comp, rates, as)
		}
		sum += r
	}
	// 8 MB/s fleet-wide; t1's get, on gw-a alone, takes the rest of gw-a
	// (the class keeps its minimum there, 5% of 10 MB/s): 0.5 and 7.5.
	if math.Abs(sum-8e6) > 1 {
		t.Fatalf("class limit 8 MB/s assigned %v in all: %v", sum, as)
	}
	// A limiter applies its node's class rate to the class's flow.
	l := NewLimiter(LimiterConfig{Node: "gw-b", SLOs: ClassSLOs{Classes: map[string]SLO{"t1/low_level": {Limit: 8e6}}}})
	st, err := l.Admit(context.Background(), "t1", comp)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Done()
	if r := st.f.bytes.Bucket.Rate(); r != 8e6 {
		t.Fatalf("static rate of the class %v, want its limit", r)
	}
	_, _, rates, _ := DecodeAssignments(data, "gw-b")
	l.Apply("i", 1, rates)
	if r := st.f.bytes.Bucket.Rate(); math.Abs(r-7.5e6) > 1 {
		t.Fatalf("assigned rate of the class on gw-b %v, want 7.5e6", r)
	}
}

// A node describes itself every HostEvery reports; the fleet view keeps
// the latest description across the reports without one, and forgets it
// with the node.
func TestFleetHosts(t *testing.T) {
	f := NewFleet(time.Minute)
	now := time.Now()
	f.now = func() time.Time { return now }
	withHost := report("gw-a", 0)
	withHost.Host = json.RawMessage(`{"name":"gw-a","disks":[{"name":"vda","scheduler":"none"}]}`)
	data, _ := json.Marshal(withHost)
	rep, err := DecodeReport(data)
	if err != nil {
		t.Fatal(err)
	}
	f.Add(rep)
	f.Add(report("gw-a", 0)) // no host this time
	f.Add(report("gw-b", 0))
	hs := f.Hosts()
	if len(hs) != 1 || hs[0].Node != "gw-a" || !json.Valid(hs[0].Host) || len(f.Nodes()[0].Host) != 0 {
		t.Fatalf("hosts %+v", hs)
	}
	if _, err := DecodeReport([]byte(`{"v":1,"node":"a","host":"x"}`)); err == nil {
		t.Fatal("a host that is not an object accepted")
	}
	now = now.Add(2 * time.Minute)
	if hs := f.Hosts(); len(hs) != 0 {
		t.Fatalf("an expired node still listed: %+v", hs)
	}
}

// A report's devices (the per-device osinfo) travel as they are, and
// nonsense is refused.
func TestReportDevices(t *testing.T) {
	r := report("gw-a", 0)
	r.Devices = []DeviceStatus{{Device: "vda", Served: 3e6, Asked: 5e6, Streams: []ThreadStatus{{TID: 42, Flow: "t1/etl", Need: 5e6, Served: 2.5e6}, {TID: 43, Served: 0.5e6}}}}
	data, _ := json.Marshal(r)
	rep, err := DecodeReport(data)
	if err != nil || len(rep.Devices) != 1 || len(rep.Devices[0].Streams) != 2 || rep.Devices[0].Streams[0] != r.Devices[0].Streams[0] {
		t.Fatalf("%+v %v", rep.Devices, err)
	}
	for _, bad := range []string{
		`{"v":1,"node":"a","devices":[{"device":"","served":1,"asked":0,"streams":[]}]}`,
		`{"v":1,"node":"a","devices":[{"device":"vda","served":-2,"asked":0,"streams":[]}]}`,
		`{"v":1,"node":"a","devices":[{"device":"vda","served":1,"asked":0,"streams":[{"tid":-1,"served":1}]}]}`,
	} {
		if _, err := DecodeReport([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	if _, err := DecodeReport([]byte(`{"v":1,"node":"a","devices":[{"device":"vda","served":-1,"asked":0,"streams":[]}]}`)); err != nil {
		t.Errorf("a device whose kernel says nothing (-1): %v", err)
	}
}
