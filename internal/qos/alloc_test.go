package qos

import (
	"math"
	"testing"
)

var inf = math.Inf(1)

// Rates in these cases are in MB/s: the algorithms are unit-free.
func d(tenant string, class Class, node string, streams int, want float64) Demand {
	return Demand{Tenant: tenant, Class: class, Node: node, Streams: streams, Want: want}
}

func checkAlloc(t *testing.T, got Allocation, want map[UnitKey]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("allocation has %d flows, want %d: %v", len(got), len(want), got)
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok || math.Abs(g-w) > 1e-6 && !(math.IsInf(g, 1) && math.IsInf(w, 1)) {
			t.Errorf("%v = %v (present %v), want %v", k, g, ok, w)
		}
	}
}

func k(tenant string, class Class, node string) UnitKey { return UnitKey{tenant, class, node} }

func TestAlgorithms(t *testing.T) {
	slos := SLOMap{
		"t1": {Get: 30, Put: 30},
		"t2": {Get: 20},
	}
	cases := []struct {
		name string
		alg  Algorithm
		p    Problem
		want map[UnitKey]float64
	}{{
		name: "reservations then equal spare (30/20/- of 80)",
		alg:  Crystal{},
		p: Problem{Capacity: map[string]float64{"a": 80}, SLOs: slos, Demands: []Demand{
			d("t1", ClassGet, "a", 1, inf), d("t2", ClassGet, "a", 1, inf), d("t3", ClassGet, "a", 1, inf)}},
		want: map[UnitKey]float64{k("t1", ClassGet, "a"): 40, k("t2", ClassGet, "a"): 30, k("t3", ClassGet, "a"): 10},
	}, {
		name: "all idle",
		alg:  Crystal{},
		p:    Problem{Capacity: map[string]float64{"a": 80}, SLOs: slos, Demands: []Demand{d("t1", ClassGet, "a", 0, 0)}},
		want: map[UnitKey]float64{},
	}, {
		name: "one tenant takes the whole node",
		alg:  Crystal{},
		p:    Problem{Capacity: map[string]float64{"a": 80}, SLOs: slos, Demands: []Demand{d("t1", ClassGet, "a", 3, inf)}},
		want: map[UnitKey]float64{k("t1", ClassGet, "a"): 80},
	}, {
		name: "limit capped, the rest to the other",
		alg:  Crystal{},
		p: Problem{Capacity: map[string]float64{"a": 80}, SLOs: SLOMap{"t1": {Limit: 20}}, Demands: []Demand{
			d("t1", ClassPut, "a", 1, inf), d("t2", ClassPut, "a", 1, inf)}},
		want: map[UnitKey]float64{k("t1", ClassPut, "a"): 20, k("t2", ClassPut, "a"): 60},
	}, {
		name: "idle reservation left to others (work conserving)",
		alg:  Crystal{},
		p: Problem{Capacity: map[string]float64{"a": 80}, SLOs: slos, Demands: []Demand{
			d("t1", ClassGet, "a", 1, 10), d("t2", ClassGet, "a", 1, inf)}},
		want: map[UnitKey]float64{k("t1", ClassGet, "a"): 10, k("t2", ClassGet, "a"): 70},
	}, {
		name: "capacity nobody asks for is handed out",
		alg:  Crystal{},
		p: Problem{Capacity: map[string]float64{"a": 80}, Demands: []Demand{
			d("t1", ClassGet, "a", 1, 10), d("t2", ClassGet, "a", 1, 20)}},
		want: map[UnitKey]float64{k("t1", ClassGet, "a"): 35, k("t2", ClassGet, "a"): 45},
	}, {
		name: "overload: reservation moved to the tenant's other node",
		alg:  Crystal{},
		p: Problem{Capacity: map[string]float64{"a": 40, "b": 100}, SLOs: SLOMap{"t1": {Get: 60}, "t2": {Get: 30}}, Demands: []Demand{
			d("t1", ClassGet, "a", 1, inf), d("t1", ClassGet, "b", 1, inf), d("t2", ClassGet, "a", 1, inf)}},
		// Fleet-wide: reservations 60 and 30, spare 50 shared equally
		// (60+x, 30+x). t2 can only use a, less t1's minimum there (5% of
		// 40 = 2): it stops at 38 (x = 8); t1 takes the rest, 2 on a and
		// all of b.
		want: map[UnitKey]float64{k("t1", ClassGet, "a"): 2, k("t1", ClassGet, "b"): 100, k("t2", ClassGet, "a"): 38},
	}, {
		name: "overload with nowhere to go: scaled down proportionally",
		alg:  Crystal{},
		p: Problem{Capacity: map[string]float64{"a": 40}, SLOs: SLOMap{"t1": {Get: 30}, "t2": {Get: 30}}, Demands: []Demand{
			d("t1", ClassGet, "a", 1, inf), d("t2", ClassGet, "a", 1, inf)}},
		want: map[UnitKey]float64{k("t1", ClassGet, "a"): 20, k("t2", ClassGet, "a"): 20},
	}, {
		name: "overload: reservations scaled down together fleet-wide",
		alg:  Crystal{},
		p: Problem{Capacity: map[string]float64{"a": 40, "b": 40}, SLOs: SLOMap{"t1": {Get: 60}, "t2": {Get: 30}}, Demands: []Demand{
			d("t1", ClassGet, "a", 1, inf), d("t1", ClassGet, "b", 1, inf), d("t2", ClassGet, "a", 1, inf)}},
		// 90 reserved of 80 in all: every reservation scaled by 8/9, t1
		// 53.3 and t2 26.7; t2 only uses a, t1 fills b and takes the 13.3
		// left on a.
		want: map[UnitKey]float64{k("t1", ClassGet, "a"): 40.0 / 3, k("t1", ClassGet, "b"): 40, k("t2", ClassGet, "a"): 80.0 / 3},
	}, {
		name: "weighted spare",
		alg:  Crystal{},
		p: Problem{Capacity: map[string]float64{"a": 100}, SLOs: SLOMap{"t1": {Weight: 3}}, Demands: []Demand{
			d("t1", ClassGet, "a", 1, inf), d("t2", ClassGet, "a", 1, inf)}},
		want: map[UnitKey]float64{k("t1", ClassGet, "a"): 75, k("t2", ClassGet, "a"): 25},
	}, {
		name: "reservation split over nodes by transfers, limit across nodes",
		alg:  Crystal{},
		p: Problem{Capacity: map[string]float64{"a": 100, "b": 100}, SLOs: SLOMap{"t1": {Get: 30, Limit: 45}}, Demands: []Demand{
			d("t1", ClassGet, "a", 2, inf), d("t1", ClassGet, "b", 1, inf)}},
		// 30 reserved as 20/10; the 15 left under the limit by weight 2:1.
		want: map[UnitKey]float64{k("t1", ClassGet, "a"): 30, k("t1", ClassGet, "b"): 15},
	}, {
		name: "unknown capacity: limited flows at their limit, others unlimited",
		alg:  Crystal{},
		p: Problem{SLOs: SLOMap{"t1": {Limit: 50}}, Demands: []Demand{
			d("t1", ClassGet, "a", 1, inf), d("t2", ClassGet, "a", 1, inf)}},
		want: map[UnitKey]float64{k("t1", ClassGet, "a"): 50, k("t2", ClassGet, "a"): inf},
	}, {
		name: "background capped by policy",
		alg:  Crystal{},
		p: Problem{Capacity: map[string]float64{"a": 100}, SLOs: SLOMap{"t1": {Background: 5}}, Demands: []Demand{
			d("t1", ClassBackground, "a", 1, inf), d("t1", ClassGet, "a", 1, inf)}},
		want: map[UnitKey]float64{k("t1", ClassBackground, "a"): 5, k("t1", ClassGet, "a"): 95},
	}, {
		name: "max-min: the small demand met, the rest split equally",
		alg:  MaxMin{},
		p: Problem{Capacity: map[string]float64{"a": 90}, SLOs: slos, Demands: []Demand{
			d("t1", ClassGet, "a", 1, 10), d("t2", ClassGet, "a", 1, inf), d("t3", ClassGet, "a", 1, inf)}},
		want: map[UnitKey]float64{k("t1", ClassGet, "a"): 10, k("t2", ClassGet, "a"): 40, k("t3", ClassGet, "a"): 40},
	}, {
		name: "max-min ignores reservations",
		alg:  MaxMin{},
		p: Problem{Capacity: map[string]float64{"a": 80}, SLOs: slos, Demands: []Demand{
			d("t1", ClassGet, "a", 1, inf), d("t3", ClassGet, "a", 1, inf)}},
		want: map[UnitKey]float64{k("t1", ClassGet, "a"): 40, k("t3", ClassGet, "a"): 40},
	}, {
		name: "max-min: all idle",
		alg:  MaxMin{},
		p:    Problem{Capacity: map[string]float64{"a": 80}, SLOs: slos, Demands: []Demand{d("t1", ClassGet, "a", 0, 0), d("t2", ClassPut, "a", 2, 0)}},
		want: map[UnitKey]float64{},
	}, {
		name: "max-min: one tenant takes the whole node",
		alg:  MaxMin{},
		p:    Problem{Capacity: map[string]float64{"a": 80}, SLOs: slos, Demands: []Demand{d("t3", ClassGet, "a", 2, inf)}},
		want: map[UnitKey]float64{k("t3", ClassGet, "a"): 80},
	}, {
		name: "max-min: limit capped, the rest to the other",
		alg:  MaxMin{},
		p: Problem{Capacity: map[string]float64{"a": 80}, SLOs: SLOMap{"t1": {Limit: 20}}, Demands: []Demand{
			d("t1", ClassGet, "a", 1, inf), d("t2", ClassGet, "a", 1, inf), d("t3", ClassGet, "a", 1, inf)}},
		// Equal thirds (26.7) would put t1 over 20: it stops there, t2 and t3 share the 60 left.
		want: map[UnitKey]float64{k("t1", ClassGet, "a"): 20, k("t2", ClassGet, "a"): 30, k("t3", ClassGet, "a"): 30},
	}, {
		name: "max-min: one share per tenant fleet-wide, the overloaded node not given past its capacity",
		alg:  MaxMin{},
		p: Problem{Capacity: map[string]float64{"a": 40, "b": 100}, SLOs: SLOMap{"t1": {Get: 60}, "t2": {Get: 30}}, Demands: []Demand{
			d("t1", ClassGet, "a", 1, inf), d("t1", ClassGet, "b", 1, inf), d("t2", ClassGet, "a", 1, inf)}},
		// Reservations ignored; equal shares fleet-wide: t2 only uses a,
		// less t1's minimum there (2): 38; t1 gets the rest, 2 on a and
		// b's 100.
		want: map[UnitKey]float64{k("t1", ClassGet, "a"): 2, k("t1", ClassGet, "b"): 100, k("t2", ClassGet, "a"): 38},
	}, {
		name: "PSFA: all idle",
		alg:  PSFA{},
		p:    Problem{Capacity: map[string]float64{"a": 80}, SLOs: SLOMap{"t1": {Weight: 3}}, Demands: []Demand{d("t1", ClassGet, "a", 0, 0)}},
		want: map[UnitKey]float64{},
	}, {
		name: "PSFA: one tenant takes the whole node whatever its weight",
		alg:  PSFA{},
		p:    Problem{Capacity: map[string]float64{"a": 80}, SLOs: SLOMap{"t1": {Weight: 0.5}}, Demands: []Demand{d("t1", ClassPut, "a", 1, inf)}},
		want: map[UnitKey]float64{k("t1", ClassPut, "a"): 80},
	}, {
		name: "PSFA: limit capped, the rest to the others by weight",
		alg:  PSFA{},
		p: Problem{Capacity: map[string]float64{"a": 100}, SLOs: SLOMap{"t1": {Weight: 3, Limit: 30}, "t2": {Weight: 2}}, Demands: []Demand{
			d("t1", ClassGet, "a", 1, inf), d("t2", ClassGet, "a", 1, inf), d("t3", ClassGet, "a", 1, inf)}},
		// 3:2:1 would give t1 50: capped at 30, the 70 left go 2:1.
		want: map[UnitKey]float64{k("t1", ClassGet, "a"): 30, k("t2", ClassGet, "a"): 140.0 / 3, k("t3", ClassGet, "a"): 70.0 / 3},
	}, {
		name: "PSFA: no false allocation to a small demand",
		alg:  PSFA{},
		p: Problem{Capacity: map[string]float64{"a": 100}, SLOs: SLOMap{"t1": {Weight: 3}}, Demands: []Demand{
			d("t1", ClassGet, "a", 1, 30), d("t2", ClassGet, "a", 1, inf)}},
		want: map[UnitKey]float64{k("t1", ClassGet, "a"): 30, k("t2", ClassGet, "a"): 70},
	}, {
		name: "PSFA: proportional when both saturate",
		alg:  PSFA{},
		p: Problem{Capacity: map[string]float64{"a": 100}, SLOs: SLOMap{"t1": {Weight: 3, Get: 90}}, Demands: []Demand{
			d("t1", ClassGet, "a", 1, inf), d("t2", ClassGet, "a", 1, inf)}},
		want: map[UnitKey]float64{k("t1", ClassGet, "a"): 75, k("t2", ClassGet, "a"): 25},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkAlloc(t, c.alg.Allocate(c.p), c.want) })
	}
}

// Whatever the input, no node is given more than its capacity unless
// reservations alone exceed it, and no rate is negative or NaN.
func TestAllocationInvariants(t *testing.T) {
	slos := SLOMap{"t0": {Get: 50, Limit: 70}, "t1": {Get: 10, Weight: 2}, "t2": {Reservation: 5}}
	for seed := range 200 {
		caps := map[string]float64{"a": float64(10 + seed%7*15), "b": float64(20 + seed%5*10)}
		var ds []Demand
		for i := range 3 {
			for j, n := range []string{"a", "b"} {
				if (seed>>(i*2+j))&1 == 0 {
					continue
				}
				want := inf
				if (seed+i)%3 == 0 {
					want = float64(1 + (seed*7+i)%40)
				}
				ds = append(ds, d("t"+string(rune('0'+i)), ClassGet, n, 1+(seed+j)%3, want))
			}
		}
		for _, alg := range Algorithms {
			got := alg.Allocate(Problem{Capacity: caps, Demands: ds, SLOs: slos})
			sum := map[string]float64{}
			for k, r := range got {
				if r < 0 || math.IsNaN(r) {
					t.Fatalf("seed %d %s: %v = %v", seed, alg.Name(), k, r)
				}
				sum[k.Node] += r
			}
			for n, s := range sum {
				if s > caps[n]*(1+1e-9) {
					t.Fatalf("seed %d %s: node %s given %v of %v", seed, alg.Name(), n, s, caps[n])
				}
			}
		}
	}
}

func TestAlgorithmByName(t *testing.T) {
	for _, n := range []string{"crystal", "maxmin", "psfa"} {
		if a, err := AlgorithmByName(n); err != nil || a.Name() != n {
			t.Fatalf("%s: %v %v", n, a, err)
		}
	}
	if _, err := AlgorithmByName("fifo"); err == nil {
		t.Fatal("unknown algorithm accepted")
	}
}

// The asymmetric fleet (docs/qos.md works it out): two gateways
// of 25 MB/s; A reserves 20 and GETs through gateway 2 only, B reserves
// 10, C has no SLO, both GET through both gateways. Fleet-wide first:
// 20+x, 10+x, x over 50 MB/s. A can only use gateway 2, less B's and C's
// minimums there (5% of 25 = 1.25 each): it stops at 22.5 (x = 2.5); B
// and C share the 27.5 left, 18.75 and 8.75. Without the minimums the
// fair shares would be 25/17.5/7.5 (A's share of the spare capped by the
// one node it uses); the minimums cost A 10% of it. The old per-node
// algorithm gave A 20, B 20, C 10, and C 0.02 on gateway 2.
func TestAsymmetricFleet(t *testing.T) {
	slos := SLOMap{"A": {Get: 20}, "B": {Get: 10}}
	p := Problem{Capacity: map[string]float64{"gw1": 25, "gw2": 25}, SLOs: slos, Demands: []Demand{
		d("A", ClassGet, "gw2", 2, inf),
		d("B", ClassGet, "gw1", 2, inf), d("B", ClassGet, "gw2", 2, inf),
		d("C", ClassGet, "gw1", 2, inf), d("C", ClassGet, "gw2", 2, inf)}}
	got := Crystal{}.Allocate(p)
	checkAlloc(t, got, map[UnitKey]float64{
		k("A", ClassGet, "gw2"): 22.5,
		k("B", ClassGet, "gw1"): 17.5, k("B", ClassGet, "gw2"): 1.25,
		k("C", ClassGet, "gw1"): 7.5, k("C", ClassGet, "gw2"): 1.25,
	})
	fleet := map[string]float64{}
	for k, r := range got {
		fleet[k.Tenant] += r
		if r < 0.05*25-1e-9 {
			t.Errorf("%v given %v, under 5%% of its node", k, r)
		}
	}
	// Against the fair shares without minimums: every tenant within the
	// minimums' cost (A -10%), B +7%, C +17%.
	for tenant, want := range map[string]float64{"A": 22.5, "B": 18.75, "C": 8.75} {
		if math.Abs(fleet[tenant]-want) > 1e-6 {
			t.Errorf("%s fleet-wide %v, want %v", tenant, fleet[tenant], want)
		}
	}
	// With no minimum share the split reaches the unconstrained model.
	p.MinShare = -1
	got = Crystal{}.Allocate(p)
	fleet = map[string]float64{}
	for k, r := range got {
		fleet[k.Tenant] += r
	}
	for tenant, want := range map[string]float64{"A": 25, "B": 17.5, "C": 7.5} {
		if math.Abs(fleet[tenant]-want) > 1e-6 {
			t.Errorf("no minimum: %s fleet-wide %v, want %v (%v)", tenant, fleet[tenant], want, got)
		}
	}
}

// No flow with demand gets less than the minimum share of its node while
// the node can give every flow there its minimum, whatever the problem;
// every algorithm's shares are the same fleet-wide whether a tenant is
// split over nodes or not (the split is after the fleet-wide share).
func TestMinimumShareInvariant(t *testing.T) {
	slos := SLOMap{"t0": {Get: 50, Limit: 70}, "t1": {Get: 10, Weight: 2}, "t2": {Reservation: 5}}
	for seed := range 200 {
		caps := map[string]float64{"a": float64(10 + seed%7*15), "b": float64(20 + seed%5*10)}
		var ds []Demand
		for i := range 3 {
			for j, n := range []string{"a", "b"} {
				if (seed>>(i*2+j))&1 == 0 {
					continue
				}
				ds = append(ds, d("t"+string(rune('0'+i)), ClassGet, n, 1+(seed+j)%3, inf))
			}
		}
		for _, alg := range Algorithms {
			got := alg.Allocate(Problem{Capacity: caps, Demands: ds, SLOs: slos})
			for _, dm := range ds {
				r := got[k(dm.Tenant, dm.Class, dm.Node)]
				if r < DefaultMinShare*caps[dm.Node]-1e-6 {
					t.Fatalf("seed %d %s: %s/%s given %v of %v: %v", seed, alg.Name(), dm.Tenant, dm.Node, r, caps[dm.Node], got)
				}
			}
		}
	}
}
