package qos

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/facet-sds/facet/internal/controller"
)

// BandwidthConfig configures the global bandwidth controller.
type BandwidthConfig struct {
	// Algorithm divides capacity; Crystal when nil.
	Algorithm Algorithm
	// SLOs loads the fleet's SLOs once per period; nil means none.
	SLOs func(ctx context.Context) (SLOSource, error)
	// Capacity is a node's capacity in bytes/s when the node reports none;
	// 0 estimates it from saturation.
	Capacity float64
	// Threshold is the relative change under which a node's rates are
	// left as published (default 0.03): assignments go out only on real
	// change.
	Threshold float64
	// Throttled is the share of a period a flow's streams must have waited
	// for tokens to count as wanting more than it got (default 0.02).
	Throttled float64
	// MinWant is the demand of a flow with open streams that moved few
	// bytes (default 256 KiB/s).
	MinWant float64
	// MinShare is the least share of a node a flow with demand there gets
	// (Problem.MinShare: DefaultMinShare when 0, none when negative).
	MinShare float64
}

// Bandwidth is the global bandwidth controller: each period it turns the
// fleet's reports (demand and usage per node and flow, capacity per node)
// and the SLOs into per-node rates with its Algorithm. Run it under a
// controller.GlobalRunner on the Fleet's snapshots; the runner holds its
// BandwidthState between periods.
type Bandwidth struct {
	cfg BandwidthConfig
}

// BandwidthState is what the controller published last, the input of its
// next period's threshold: a node's rates are republished only when one
// moves by more than the threshold.
type BandwidthState struct {
	Bytes Allocation // bytes/s published per flow and node
	Ops   Allocation // ops/s published per flow and node
}

var _ controller.GlobalController = (*Bandwidth)(nil)

// NewBandwidth returns the controller.
func NewBandwidth(cfg BandwidthConfig) *Bandwidth {
	if cfg.Algorithm == nil {
		cfg.Algorithm = Crystal{}
	}
	if cfg.Threshold <= 0 {
		cfg.Threshold = 0.03
	}
	if cfg.Throttled <= 0 {
		cfg.Throttled = 0.02
	}
	if cfg.MinWant <= 0 {
		cfg.MinWant = 256 << 10
	}
	return &Bandwidth{cfg: cfg}
}

// Name implements controller.GlobalController.
func (b *Bandwidth) Name() string { return ControllerName }

// Algorithm is the algorithm in use.
func (b *Bandwidth) Algorithm() Algorithm { return b.cfg.Algorithm }

// Reconcile implements controller.GlobalController: it reads the SLOs in
// force (the one input that is not in the snapshot) and decides.
func (b *Bandwidth) Reconcile(ctx context.Context, snap controller.MetricSnapshot, mem controller.Memory) (controller.Assignments, controller.Memory, error) {
	var slos SLOSource = SLOMap{}
	if b.cfg.SLOs != nil {
		s, err := b.cfg.SLOs(ctx)
		if err != nil {
			return nil, mem, fmt.Errorf("load SLOs: %w", err)
		}
		slos = s
	}
	prev, _ := mem.(BandwidthState) // zero on the first period
	as, next := b.Decide(snap, slos, prev)
	return as, next, nil
}

// Decide is the controller's pure function: from a fleet snapshot, the
// SLOs and what was published last, the assignments to publish and the
// state of the next period.
func (b *Bandwidth) Decide(snap controller.MetricSnapshot, slos SLOSource, prev BandwidthState) (controller.Assignments, BandwidthState) {
	p := ProblemFromSnapshot(snap, b.cfg)
	p.SLOs = slos
	// An estimated capacity only matters where there is a reservation to
	// keep: elsewhere it would hold back a workload that is still growing,
	// so such nodes count as unbounded (limits still apply).
	for n := range p.Estimated {
		if !contended(p.Demands, slos, n) {
			delete(p.Capacity, n)
		}
	}
	alloc := b.cfg.Algorithm.Allocate(p)
	// Operations: each tenant's (and class's) ops cap is fleet-wide too,
	// split over the nodes where it has demand like bytes; nodes have no
	// operations capacity, so only caps bind.
	ops := b.cfg.Algorithm.Allocate(OpsProblemFromSnapshot(snap, opsSLOs{slos}))

	out, bytes := publish(alloc, prev.Bytes, b.cfg.Threshold, Class.Key)
	opsOut, opsNext := publish(ops, prev.Ops, b.cfg.Threshold, Class.OpsKey)
	return append(out, opsOut...), BandwidthState{Bytes: bytes, Ops: opsNext}
}

// contended reports whether an estimated capacity must hold on node: a
// flow with demand there has a reservation and some other flow (another
// tenant's, or another class of its own) has demand there too. A
// reservation is a floor, never a limit: a flow alone on its node runs
// unshaped, as it would with no SLO, for an estimate (the most the node
// moved in a period, plus 10%) understates what it can do and grows
// slowly (issue 25: a 20 MB/s reservation made its tenant's GET 9× slower
// on an idle server).
func contended(ds []Demand, slos SLOSource, node string) bool {
	reserved, others := false, 0
	for _, d := range ds {
		if d.Node != node || d.Class == ClassDelete {
			continue // deletes carry no bytes
		}
		others++
		if SLOOf(slos, d.Tenant, d.Class).ReservationOf(d.Class) > 0 {
			reserved = true
		}
	}
	return reserved && others > 1
}

// publish turns an allocation into assignments under key, keeping the
// rates last published to a node when none of its flows would move by
// more than threshold; otherwise the node gets the whole new set, so that
// small moves cannot pile up into capacity left unassigned. +Inf
// (unassigned) flows run at their nodes' static rates.
func publish(alloc Allocation, last Allocation, threshold float64, key func(Class) string) (controller.Assignments, Allocation) {
	moved := map[string]bool{}
	for k, r := range alloc {
		old, ok := last[k]
		if !ok || math.IsInf(r, 1) != math.IsInf(old, 1) || math.Abs(r-old) > threshold*old {
			moved[k.Node] = true
		}
	}
	for k := range last {
		if _, ok := alloc[k]; !ok {
			moved[k.Node] = true
		}
	}
	next := Allocation{}
	out := controller.Assignments{}
	for k, r := range alloc {
		if !moved[k.Node] {
			r = last[k]
		}
		next[k] = r
		if math.IsInf(r, 1) {
			continue
		}
		out = append(out, controller.Assignment{Node: k.Node, Target: "tenant:" + k.Tenant, Key: key(k.Class), Value: math.Round(r)})
	}
	// Map order must not leak into the output: a pure decision gives the
	// same assignments, in the same order, for the same input.
	slices.SortFunc(out, func(a, b controller.Assignment) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Target, b.Target), cmp.Compare(a.Key, b.Key))
	})
	return out, next
}

// ProblemFromSnapshot reads capacities and demands from a Fleet snapshot.
// A flow wants more than it got (+Inf) when its streams waited for tokens
// for more than cfg.Throttled of the period; otherwise it wants a quarter
// more than it moved, at least cfg.MinWant while it has streams open.
func ProblemFromSnapshot(snap controller.MetricSnapshot, cfg BandwidthConfig) Problem {
	if cfg.Throttled <= 0 {
		cfg.Throttled = 0.02
	}
	if cfg.MinWant <= 0 {
		cfg.MinWant = 256 << 10
	}
	nodes, flows, order := parseSnapshot(snap)
	p := Problem{Capacity: map[string]float64{}, MinShare: cfg.MinShare}
	for name, n := range nodes {
		switch {
		case n.capacity > 0:
			p.Capacity[name] = n.capacity
		case cfg.Capacity > 0:
			p.Capacity[name] = cfg.Capacity
		case n.estimate > 0:
			p.Capacity[name] = n.estimate
			if p.Estimated == nil {
				p.Estimated = map[string]bool{}
			}
			p.Estimated[name] = true
		}
	}
	for _, k := range order {
		f := flows[k]
		if f.streams == 0 && f.served == 0 {
			continue
		}
		period := 0.5
		if n := nodes[k.Node]; n != nil && n.period > 0 {
			period = n.period
		}
		want := f.served * 1.25
		if f.streams > 0 {
			want = math.Max(want, cfg.MinWant)
		}
		if f.waited > cfg.Throttled*period*math.Max(f.streams, 1) {
			want = math.Inf(1)
		}
		p.Demands = append(p.Demands, Demand{Tenant: k.Tenant, Class: k.Class, Node: k.Node, Streams: int(f.streams), Want: want})
	}
	return p
}

// OpsProblemFromSnapshot is the operations problem of a Fleet snapshot:
// no node capacity, demands in ops/s. A flow wants more than it got (+Inf)
// when operations were refused or it ran at 90% of its rate; otherwise a
// quarter more than it did, at least 1 op/s while it has streams open.
func OpsProblemFromSnapshot(snap controller.MetricSnapshot, slos SLOSource) Problem {
	_, flows, order := parseSnapshot(snap)
	p := Problem{Capacity: map[string]float64{}, SLOs: slos, Operations: true}
	for _, k := range order {
		f := flows[k]
		if f.streams == 0 && f.ops == 0 {
			continue
		}
		want := math.Max(f.ops*1.25, math.Min(f.streams, 1))
		if f.rejected > 0 || f.opsRate > 0 && f.ops >= 0.9*f.opsRate {
			want = math.Inf(1)
		}
		p.Demands = append(p.Demands, Demand{Tenant: k.Tenant, Class: k.Class, Node: k.Node, Streams: int(f.streams), Want: want})
	}
	return p
}

// opsSLOs presents operations caps as the limits of an SLO source, for
// the operations problem: a context class without a cap of its own keeps
// its tenant's, as the limiter does.
type opsSLOs struct{ src SLOSource }

func (o opsSLOs) SLO(tenant string) (SLO, bool) {
	s := SLOOf(o.src, tenant, ClassGet)
	return SLO{Limit: s.Ops, Weight: s.Weight}, s.Ops > 0
}

func (o opsSLOs) ClassSLO(tenant, class string) (SLO, bool) {
	s := SLOOf(o.src, tenant, ContextClass(class))
	if s.Ops == 0 {
		return o.SLO(tenant)
	}
	return SLO{Limit: s.Ops, Weight: s.Weight}, true
}

type nodeInfo struct{ capacity, estimate, period float64 }

type flowInfo struct{ streams, served, waited, ops, rejected, opsRate float64 }

// parseSnapshot reads a Fleet snapshot's per-node samples: node
// capacities and periods, and each flow's quantities per node, in the
// order flows first appear.
func parseSnapshot(snap controller.MetricSnapshot) (map[string]*nodeInfo, map[UnitKey]*flowInfo, []UnitKey) {
	nodes := map[string]*nodeInfo{}
	flows := map[UnitKey]*flowInfo{}
	var order []UnitKey
	for _, s := range snap.Samples {
		if s.Node == "" {
			continue
		}
		if strings.HasPrefix(s.Target, "node:") {
			n := nodes[s.Node]
			if n == nil {
				n = &nodeInfo{}
				nodes[s.Node] = n
			}
			switch s.Metric {
			case metricCapacity:
				n.capacity = s.Value
			case metricEstimated:
				n.estimate = s.Value
			case metricPeriod:
				n.period = s.Value
			}
			continue
		}
		tenant, ok := strings.CutPrefix(s.Target, "tenant:")
		if !ok {
			continue
		}
		rest, ok := strings.CutPrefix(s.Metric, "qos_")
		if !ok {
			continue
		}
		// A context class's name may hold '_'; the quantity never does.
		i := strings.LastIndexByte(rest, '_')
		if i < 0 {
			continue
		}
		cls, what := rest[:i], rest[i+1:]
		c, err := ParseClass(cls)
		if err != nil {
			continue
		}
		k := UnitKey{tenant, c, s.Node}
		f := flows[k]
		if f == nil {
			f = &flowInfo{}
			flows[k] = f
			order = append(order, k)
		}
		switch what {
		case "streams":
			f.streams = s.Value
		case "served":
			f.served = s.Value
		case "waited":
			f.waited = s.Value
		case "ops":
			f.ops = s.Value
		case "rejected":
			f.rejected = s.Value
		case "opsrate":
			f.opsRate = s.Value
		}
	}
	return nodes, flows, order
}
