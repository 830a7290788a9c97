package qos

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/bus"
	"github.com/facet-sds/facet/internal/controller"
)

func report(node string, capacity float64, flows ...FlowStatus) NodeReport {
	return NodeReport{V: ReportVersion, Node: node, Stage: StageGateway, Capacity: capacity, Time: time.Now(), PeriodMS: 500, Flows: flows}
}

// The controller reads demand from reports (throttled flows want more,
// others a quarter more than they moved), allocates, and republishes only
// changes above its threshold.
func TestBandwidthController(t *testing.T) {
	f := NewFleet(time.Minute)
	f.Add(report("a", 80e6,
		FlowStatus{Tenant: "t1", Class: ClassGet, Streams: 2, Served: 40e6, Waited: 0.9},
		FlowStatus{Tenant: "t2", Class: ClassGet, Streams: 2, Served: 30e6, Waited: 0.9},
		FlowStatus{Tenant: "t3", Class: ClassGet, Streams: 1, Served: 4e6, Waited: 0}, // not throttled: wants 5
	))
	b := NewBandwidth(BandwidthConfig{SLOs: func(context.Context) (SLOSource, error) {
		return SLOMap{"t1": {Get: 30e6}, "t2": {Get: 20e6}}, nil
	}})
	snap, _ := f.Snapshot(context.Background())
	as, mem, err := b.Reconcile(context.Background(), snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, a := range as {
		got[a.Target] = a.Value
		if a.Node != "a" || a.Key != "get_bw" {
			t.Fatalf("assignment %+v", a)
		}
	}
	// Reserve 30 and 20, t3 takes its 5; the 25 left split equally among
	// t1 and t2 (t3 is satisfied), then nothing is left over.
	want := map[string]float64{"tenant:t1": 42.5e6, "tenant:t2": 32.5e6, "tenant:t3": 5e6}
	for k, w := range want {
		if math.Abs(got[k]-w) > 1 {
			t.Errorf("%s = %v, want %v", k, got[k], w)
		}
	}
	// A change under the 3% threshold (t3 wants 2.5% more) keeps the
	// published rate.
	f.Add(report("a", 80e6,
		FlowStatus{Tenant: "t1", Class: ClassGet, Streams: 2, Served: 40e6, Waited: 0.9},
		FlowStatus{Tenant: "t2", Class: ClassGet, Streams: 2, Served: 30e6, Waited: 0.9},
		FlowStatus{Tenant: "t3", Class: ClassGet, Streams: 1, Served: 4.1e6, Waited: 0},
	))
	snap, _ = f.Snapshot(context.Background())
	as2, _, _ := b.Reconcile(context.Background(), snap, mem)
	for _, a := range as2 {
		if a.Value != got[a.Target] {
			t.Errorf("%s moved from %v to %v under the threshold", a.Target, got[a.Target], a.Value)
		}
	}
}

func TestProblemCapacity(t *testing.T) {
	f := NewFleet(time.Minute)
	f.Add(report("configured", 80e6, FlowStatus{Tenant: "t1", Class: ClassPut, Streams: 1, Served: 10e6}))
	f.Add(report("estimated", 0, FlowStatus{Tenant: "t1", Class: ClassPut, Streams: 1, Served: 10e6}))
	snap, _ := f.Snapshot(context.Background())
	p := ProblemFromSnapshot(snap, BandwidthConfig{})
	if p.Capacity["configured"] != 80e6 || math.Abs(p.Capacity["estimated"]-11e6) > 1 || !p.Estimated["estimated"] || p.Estimated["configured"] {
		t.Fatalf("capacities %v (estimated %v)", p.Capacity, p.Estimated)
	}
	// Without a reservation there, an estimated node is not held to its
	// estimate; with one, it is.
	b := NewBandwidth(BandwidthConfig{})
	as, _, _ := b.Reconcile(context.Background(), snap, nil)
	for _, a := range as {
		if a.Node == "estimated" {
			t.Fatalf("flow on an estimated node without reservations assigned %v", a)
		}
	}
	// A reservation is a floor, never a limit: a reserved flow alone on an
	// estimated node is not held to the estimate either (issue 25: it made
	// its tenant's GETs 9× slower on an idle server).
	b = NewBandwidth(BandwidthConfig{SLOs: func(context.Context) (SLOSource, error) { return SLOMap{"t1": {Put: 5e6}}, nil }})
	as, _, _ = b.Reconcile(context.Background(), snap, nil)
	for _, a := range as {
		if a.Node == "estimated" {
			t.Fatalf("a reserved flow alone on an estimated node assigned %v", a)
		}
	}
	// With another flow there, the estimate holds: 6 + 4 MB/s served,
	// 11 estimated; t1 reserves 5, the 6 left go 3/3.
	f2 := NewFleet(time.Minute)
	f2.Add(report("estimated", 0,
		FlowStatus{Tenant: "t1", Class: ClassPut, Streams: 1, Served: 6e6, Waited: 0.4},
		FlowStatus{Tenant: "t2", Class: ClassPut, Streams: 1, Served: 4e6, Waited: 0.4}))
	snap2, _ := f2.Snapshot(context.Background())
	as, _, _ = b.Reconcile(context.Background(), snap2, nil)
	got := map[string]float64{}
	for _, a := range as {
		got[a.Target] = a.Value
	}
	if math.Abs(got["tenant:t1"]-8e6) > 1 || math.Abs(got["tenant:t2"]-3e6) > 1 {
		t.Fatalf("contended estimated node: %v, want t1 8e6 and t2 3e6", as)
	}
	p = ProblemFromSnapshot(snap, BandwidthConfig{Capacity: 50e6})
	if p.Capacity["estimated"] != 50e6 {
		t.Fatalf("default capacity not used: %v", p.Capacity)
	}
}

// Gateways' agents report on the bus; a controller runner on the fleet
// view publishes assignments; the agents apply them.
func TestAgentsAndControllerOverTheBus(t *testing.T) {
	srv, err := bus.StartServer(bus.ServerOptions{Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	conn := func(name string) *bus.NATS {
		c, err := srv.Connect(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ls []*Limiter
	for _, n := range []string{"a", "b"} {
		l := NewLimiter(LimiterConfig{Node: n, Capacity: 10e6})
		ls = append(ls, l)
		go func() { _ = NewAgent(l, conn(n), 50*time.Millisecond, nil, nil).Run(ctx) }()
		st, _ := l.Admit(ctx, "t1", ClassGet)
		defer st.Done()
	}
	fleet := NewFleet(time.Second)
	cb := conn("controller")
	stop, err := fleet.Subscribe(cb, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	r, err := controller.NewGlobalRunner(NewBandwidth(BandwidthConfig{}), controller.GlobalConfig{Source: fleet, Publisher: cb, Period: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = r.Serve(ctx) }()
	for _, l := range ls {
		for {
			rep := l.Report()
			if len(rep.Flows) == 1 && rep.Flows[0].Source == SourceAssigned {
				if rep.Flows[0].Rate != 10e6 {
					t.Fatalf("node %s: t1 assigned %v, want the node's 10 MB/s", l.Node(), rep.Flows[0].Rate)
				}
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	if len(fleet.Nodes()) != 2 || fleet.Assignments() == nil {
		t.Fatalf("fleet view: %d nodes, assignments %v", len(fleet.Nodes()), fleet.Assignments())
	}
	data, _ := json.Marshal(fleet.Assignments())
	if _, _, rates, err := DecodeAssignments(data, "a"); err != nil || rates["t1"][ClassGet] != 10e6 {
		t.Fatalf("decode: %v %v", rates, err)
	}
	if _, _, _, err := DecodeAssignments([]byte(`{"v":2}`), "a"); err == nil {
		t.Fatal("version 2 accepted")
	}
}

func FuzzDecodeAssignments(f *testing.F) {
	f.Add([]byte(`{"v":1,"controller":"bandwidth","instance":"i","seq":3,"assignments":[{"node":"a","target":"tenant:t1","key":"get_bw","value":1e6}]}`), "a")
	f.Add([]byte(`{"v":2}`), "a")
	f.Fuzz(func(t *testing.T, data []byte, node string) {
		_, _, rates, err := DecodeAssignments(data, node)
		if err != nil {
			return
		}
		for tenant, cs := range rates {
			for c, r := range cs {
				if _, err := ParseClass(string(c)); err != nil || r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
					t.Fatalf("%s/%s = %v", tenant, c, r)
				}
			}
		}
	})
}

func FuzzDecodeReport(f *testing.F) {
	rep, _ := json.Marshal(report("a", 1e6, FlowStatus{Tenant: "t1", Class: ClassGet, Streams: 1, Served: 5}))
	f.Add(rep)
	f.Add([]byte(`{"v":1,"node":"a","flows":[{"tenant":"t","class":"nope"}]}`))
	f.Add([]byte(`{"v":1,"node":"a","host":{"name":"a","disks":[]},"flows":[{"tenant":"t","class":"ctx:low_level","streams":1,"served":3}]}`))
	f.Add([]byte(`{"v":1,"node":"a","host":[1]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := DecodeReport(data)
		if err != nil {
			return
		}
		if h := rep.Host; h != nil && (h[0] != '{' || !json.Valid(h)) {
			t.Fatalf("host %q accepted", h)
		}
		// Whatever is accepted makes a problem the algorithms can take.
		fl := NewFleet(time.Minute)
		fl.Add(rep)
		snap, _ := fl.Snapshot(context.Background())
		p := ProblemFromSnapshot(snap, BandwidthConfig{})
		for k, r := range (Crystal{}).Allocate(p) {
			if r < 0 || math.IsNaN(r) {
				t.Fatalf("%v = %v from %s", k, r, data)
			}
		}
	})
}

// The controller keeps no state of its own: the same snapshot, SLOs and
// previous state give the same assignments and next state, and the
// previous state is left as it was (the runner holds it).
func TestBandwidthDecideIsPure(t *testing.T) {
	f := NewFleet(time.Minute)
	f.Add(report("a", 80e6,
		FlowStatus{Tenant: "t1", Class: ClassGet, Streams: 2, Served: 40e6, Waited: 0.9},
		FlowStatus{Tenant: "t2", Class: ClassPut, Streams: 1, Served: 4e6, Ops: 10}))
	snap, _ := f.Snapshot(context.Background())
	slos := SLOMap{"t1": {Get: 30e6, Ops: 50}}
	b := NewBandwidth(BandwidthConfig{})
	as1, s1 := b.Decide(snap, slos, BandwidthState{})
	as2, s2 := b.Decide(snap, slos, BandwidthState{})
	if !reflect.DeepEqual(as1, as2) || !reflect.DeepEqual(s1, s2) || len(s1.Bytes) == 0 {
		t.Fatalf("two decisions on the same input differ:\n%+v %+v\n%+v %+v", as1, s1, as2, s2)
	}
	before := maps.Clone(s1.Bytes)
	f.Add(report("a", 80e6, FlowStatus{Tenant: "t3", Class: ClassGet, Streams: 1, Served: 1e6}))
	snap2, _ := f.Snapshot(context.Background())
	_, s3 := b.Decide(snap2, slos, s1)
	if !reflect.DeepEqual(s1.Bytes, before) {
		t.Fatalf("Decide changed the state it was given: %v, was %v", s1.Bytes, before)
	}
	if reflect.DeepEqual(s3.Bytes, s1.Bytes) {
		t.Fatal("another snapshot, the same next state")
	}
}

// The asymmetric fleet through the controller: reports of two
// gateways of 25 MB/s, every flow throttled (waited), A on gw2 only. The
// assignments are the fleet-wide shares split as docs/qos.md works out:
// gw2 A 22.5, B 1.25, C 1.25; gw1 B 17.5, C 7.5.
func TestDecideAsymmetricFleet(t *testing.T) {
	f := NewFleet(time.Minute)
	throttled := func(tenant string, served float64) FlowStatus {
		return FlowStatus{Tenant: tenant, Class: ClassGet, Streams: 2, Served: served, Waited: 0.5}
	}
	f.Add(report("gw1", 25e6, throttled("B", 15e6), throttled("C", 10e6)))
	f.Add(report("gw2", 25e6, throttled("A", 20e6), throttled("B", 5e6), throttled("C", 0.02e6)))
	snap, _ := f.Snapshot(context.Background())
	b := NewBandwidth(BandwidthConfig{})
	as, _ := b.Decide(snap, SLOMap{"A": {Get: 20e6}, "B": {Get: 10e6}}, BandwidthState{})
	got := map[string]float64{}
	for _, a := range as {
		if a.Key == "get_bw" {
			got[a.Node+"/"+a.Target] = a.Value
		}
	}
	want := map[string]float64{"gw2/tenant:A": 22.5e6, "gw2/tenant:B": 1.25e6, "gw2/tenant:C": 1.25e6, "gw1/tenant:B": 17.5e6, "gw1/tenant:C": 7.5e6}
	if len(got) != len(want) {
		t.Fatalf("assignments %v, want %v", got, want)
	}
	for k, w := range want {
		if math.Abs(got[k]-w) > 1 {
			t.Errorf("%s = %v, want %v", k, got[k], w)
		}
	}
}
