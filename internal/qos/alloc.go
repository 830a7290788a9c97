package qos

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Demand is one flow's demand on one node in one period.
type Demand struct {
	Tenant string `json:"tenant"`
	Class  Class  `json:"class"`
	Node   string `json:"node"`
	// Streams is the number of parallel transfers.
	Streams int `json:"streams"`
	// Want is the bandwidth wanted in bytes/s: +Inf when the flow would
	// take whatever it is given (it waited for tokens).
	Want float64 `json:"want"`
}

// UnitKey names one flow on one node in an Allocation.
type UnitKey struct {
	Tenant string
	Class  Class
	Node   string
}

// Problem is one allocation round: node capacities, flows' demands and
// tenants' SLOs.
type Problem struct {
	// Capacity per node in bytes/s; +Inf (or a missing node) when unknown.
	Capacity map[string]float64
	// Estimated marks the capacities estimated from saturation rather
	// than configured.
	Estimated map[string]bool
	Demands   []Demand
	SLOs      SLOSource
	// Operations marks a problem in operations per second (OpsProblem-
	// FromSnapshot): deletes count there, while they carry no bytes.
	Operations bool
	// MinShare is the least share of a node's capacity a flow with demand
	// there is given while the capacity allows: DefaultMinShare when 0,
	// none when negative.
	MinShare float64
}

// Allocation is a rate in bytes/s per flow and node; +Inf means
// unlimited. Flows without demand are absent.
type Allocation map[UnitKey]float64

// Algorithm divides node capacities among flows. Implementations are pure
// functions of the Problem.
type Algorithm interface {
	Name() string
	Allocate(p Problem) Allocation
}

// Algorithms lists the selectable algorithms by name.
var Algorithms = []Algorithm{Crystal{}, MaxMin{}, PSFA{}}

// AlgorithmByName returns the named algorithm.
func AlgorithmByName(name string) (Algorithm, error) {
	for _, a := range Algorithms {
		if a.Name() == name {
			return a, nil
		}
	}
	return nil, fmt.Errorf("qos: unknown algorithm %q (want crystal, maxmin or psfa)", name)
}

// Crystal is Crystal's Algorithm 1 made demand-aware and fleet-wide
// first: every tenant and class gets min(reservation, demand) and a
// weighted max-min share of the spare over unmet demand, capped by its
// limit, computed over the whole fleet (what its nodes can carry taken
// into account); only then is that share split over the nodes where it
// has demand, in proportion to its transfers, moving share between a
// tenant's nodes where a node is full. No flow with demand gets less than
// Problem.MinShare of its node while the node's capacity allows, and
// capacity nobody asked for is handed out last (work-conserving).
type Crystal struct{}

// Name implements Algorithm.
func (Crystal) Name() string { return "crystal" }

// Allocate implements Algorithm.
func (Crystal) Allocate(p Problem) Allocation { return allocate(p, true, true) }

// MaxMin is max-min fair share (PADLL): every tenant and class the same
// share fleet-wide, a flow never given more than it demands, what it
// leaves shared again among the others; reservations and weights are
// ignored, limits honoured. Capacity nobody asks for is handed out the
// same way.
type MaxMin struct{}

// Name implements Algorithm.
func (MaxMin) Name() string { return "maxmin" }

// Allocate implements Algorithm.
func (MaxMin) Allocate(p Problem) Allocation { return allocate(p, false, false) }

// PSFA is proportional sharing without false allocation (PAIO/PADLL):
// shares in proportion to the tenants' weights, but never more than a flow
// demands; the rest goes to the others in the same proportions.
// Reservations are ignored, limits honoured.
type PSFA struct{}

// Name implements Algorithm.
func (PSFA) Name() string { return "psfa" }

// Allocate implements Algorithm.
func (PSFA) Allocate(p Problem) Allocation { return allocate(p, false, true) }

// DefaultMinShare is the least share of a node's capacity a flow with
// demand there gets (Problem.MinShare when 0): a tenant is never starved
// on a node because its fleet-wide share could be served elsewhere.
const DefaultMinShare = 0.05

// unit is one flow on one node during allocation.
type unit struct {
	UnitKey
	group   int
	node    int
	streams int
	want    float64
	ub      float64 // most it can use: min(want, node capacity, limit)
	floor   float64 // its minimum share of the node
	w       float64 // weight in the fills
	rate    float64
}

type group struct {
	tenant  string
	class   Class
	units   []*unit
	streams int     // of its bounded units
	reserve float64 // min(reservation, what it can use)
	limit   float64
	weight  float64
	floor   float64 // sum of its units' floors
	hi      float64 // most it can use fleet-wide
	share   float64 // its fleet-wide share
}

const eps = 1e-6 // bytes/s: below this, a room or a need is exhausted

func allocate(p Problem, reserve, weighted bool) Allocation {
	groups, units := buildGroups(p, reserve)
	out := Allocation{}
	if len(units) == 0 {
		return out
	}
	var nodes []string
	nodeIdx := map[string]int{}
	for _, u := range units {
		if _, ok := nodeIdx[u.Node]; !ok {
			nodeIdx[u.Node] = len(nodes)
			nodes = append(nodes, u.Node)
		}
		u.node = nodeIdx[u.Node]
	}
	capN := make([]float64, len(nodes))
	for i, n := range nodes {
		capN[i] = math.Inf(1)
		if c, ok := p.Capacity[n]; ok && c > 0 {
			capN[i] = c
		}
	}
	minShare := p.MinShare
	if minShare == 0 {
		minShare = DefaultMinShare
	}
	// What each flow can use; a flow bounded by nothing (no capacity on
	// its node, no limit, unbounded demand) runs unlimited and leaves the
	// problem.
	var bounded []*unit
	for _, u := range units {
		g := groups[u.group]
		u.ub = math.Min(math.Min(u.want, capN[u.node]), g.limit)
		if math.IsInf(u.ub, 1) {
			u.rate = math.Inf(1)
			g.reserve = 0 // met where it is unlimited
			continue
		}
		bounded = append(bounded, u)
	}
	setFloors(groups, bounded, capN, max(minShare, 0))
	for _, g := range groups {
		var ub float64
		for _, u := range g.units {
			if !math.IsInf(u.rate, 1) {
				ub += u.ub
				g.streams += u.streams
			}
		}
		g.hi = math.Max(math.Min(g.limit, ub), g.floor)
		g.reserve = math.Min(g.reserve, g.hi)
	}
	net := newFleetNet(groups, bounded, capN)
	shares := fleetShares(groups, net, weighted)
	for i, g := range groups {
		g.share = shares[i]
	}
	split(groups, bounded, capN, net)
	// What nobody asked for goes to the flows on the node by weight, up to
	// their limits: no capacity is held back.
	nodeRoom := map[string]float64{}
	for i, n := range nodes {
		nodeRoom[n] = capN[i]
	}
	groupRoom := make([]float64, len(groups))
	for i, g := range groups {
		groupRoom[i] = g.limit
	}
	for _, u := range units {
		if !math.IsInf(u.rate, 1) {
			nodeRoom[u.Node] -= u.rate
			groupRoom[u.group] -= u.rate
		}
		g := groups[u.group]
		w := 1.0
		if weighted {
			w = g.weight
		}
		u.w = w * float64(max(u.streams, 1)) / float64(max(g.streams, 1))
	}
	fill(bounded, nodeRoom, groupRoom, func(*unit) float64 { return math.Inf(1) })
	for _, u := range units {
		out[u.UnitKey] = u.rate
	}
	return out
}

func buildGroups(p Problem, reserve bool) ([]*group, []*unit) {
	byKey := map[[2]string]*group{}
	var groups []*group
	var units []*unit
	ds := slices.Clone(p.Demands)
	slices.SortFunc(ds, func(a, b Demand) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Class, b.Class), cmp.Compare(a.Node, b.Node))
	})
	for _, d := range ds {
		if !(d.Want > 0) || d.Class == ClassDelete && !p.Operations {
			continue
		}
		k := [2]string{d.Tenant, string(d.Class)}
		g := byKey[k]
		if g == nil {
			slo := SLOOf(p.SLOs, d.Tenant, d.Class)
			g = &group{tenant: d.Tenant, class: d.Class, limit: slo.LimitOf(d.Class), weight: slo.WeightOf()}
			if reserve {
				g.reserve = slo.ReservationOf(d.Class)
			}
			byKey[k] = g
			groups = append(groups, g)
		}
		if slices.ContainsFunc(g.units, func(o *unit) bool { return o.Node == d.Node }) {
			continue // one demand per flow and node
		}
		u := &unit{UnitKey: UnitKey{d.Tenant, d.Class, d.Node}, group: slices.Index(groups, g), streams: max(d.Streams, 1), want: d.Want}
		g.units = append(g.units, u)
		units = append(units, u)
	}
	return groups, units
}

// setFloors gives every bounded flow with demand its minimum share of its
// node: minShare of the capacity, never past what it can use, scaled down
// where the node cannot give every flow its minimum, and where a group's
// minimums would exceed its limit.
func setFloors(groups []*group, bounded []*unit, capN []float64, minShare float64) {
	sum := make([]float64, len(capN))
	for _, u := range bounded {
		if !math.IsInf(capN[u.node], 1) {
			u.floor = math.Min(minShare*capN[u.node], u.ub)
			sum[u.node] += u.floor
		}
	}
	for _, u := range bounded {
		if sum[u.node] > capN[u.node] {
			u.floor *= capN[u.node] / sum[u.node]
		}
		groups[u.group].floor += u.floor
	}
	for _, g := range groups {
		if g.floor > g.limit {
			for _, u := range g.units {
				u.floor *= g.limit / g.floor
			}
			g.floor = g.limit
		}
	}
}

// fleetNet is the fleet as a flow network: source → group (its share
// above its floors) → node (each flow's room above its floor) → sink
// (each node's capacity above the floors). A set of shares can be served
// exactly when the maximum flow carries them all.
type fleetNet struct {
	groups, nodes int
	bounded       []*unit
	unitCap       []float64
	nodeCap       []float64
	floor         []float64 // per group
	tol           float64
}

func newFleetNet(groups []*group, bounded []*unit, capN []float64) *fleetNet {
	n := &fleetNet{groups: len(groups), nodes: len(capN), bounded: bounded, nodeCap: make([]float64, len(capN)), floor: make([]float64, len(groups))}
	var scale float64
	for _, u := range bounded {
		n.unitCap = append(n.unitCap, math.Max(u.ub-u.floor, 0))
		scale += u.ub
	}
	for i, c := range capN {
		n.nodeCap[i] = c
		if math.IsInf(c, 1) {
			// Never binding: no more than its flows can use.
			n.nodeCap[i] = 0
			for _, u := range bounded {
				if u.node == i {
					n.nodeCap[i] += u.ub
				}
			}
		}
	}
	for _, u := range bounded {
		n.nodeCap[u.node] -= u.floor
	}
	for i, c := range n.nodeCap {
		n.nodeCap[i] = math.Max(c, 0)
	}
	for i, g := range groups {
		n.floor[i] = g.floor
	}
	n.tol = 1e-9 * math.Max(scale, 1)
	return n
}

// solve runs the maximum flow for the groups' shares, from the flows'
// current rates above their floors when start is set; it returns the
// network, whether every share is carried, and per group whether it is
// on the source side of the minimum cut (a bottleneck: none of them can
// have more unless another has less).
func (n *fleetNet) solve(shares []float64, start bool) (*maxflow, bool, []bool) {
	g := newMaxflow(2+n.groups+n.nodes, n.tol)
	s, t := 0, 1
	var want float64
	src := make([]int, n.groups)
	for i := range n.groups {
		c := math.Max(shares[i]-n.floor[i], 0)
		want += c
		src[i] = g.add(s, 2+i, c)
	}
	sink := make([]int, n.nodes)
	for j := range n.nodes {
		sink[j] = g.add(2+n.groups+j, t, n.nodeCap[j])
	}
	for k, u := range n.bounded {
		e := g.add(2+u.group, 2+n.groups+u.node, n.unitCap[k])
		g.units = append(g.units, e)
		if start {
			x := math.Min(math.Max(u.rate-u.floor, 0), n.unitCap[k])
			g.push(e, x)
			g.push(src[u.group], x)
			g.push(sink[u.node], x)
		}
	}
	got := g.run(s, t)
	if start {
		got = 0
		for i := range n.groups {
			got += g.flow(src[i])
		}
	}
	reach := g.reach(s)
	side := make([]bool, n.groups)
	for i := range n.groups {
		side[i] = reach[2+i]
	}
	return g, got >= want-n.tol*float64(1+n.groups), side
}

// lever is a group's share as a function of the fill level x:
// clamp(base + w·x, lo, hi).
type lever struct{ base, w, lo, hi float64 }

func (l lever) at(x float64) float64 {
	return math.Min(math.Max(l.base+l.w*x, l.lo), math.Max(l.hi, l.lo))
}

// fleetShares computes every group's share fleet-wide: (1) reservations
// (min(reservation, demand)), scaled down together where the fleet cannot
// carry them; (2) the spare by weighted max-min over what each group can
// still use, capped by limits. Both are progressive fills: every group's
// share grows with the level until the network cannot carry more for it.
func fleetShares(groups []*group, net *fleetNet, weighted bool) []float64 {
	res := make([]lever, len(groups))
	for i, g := range groups {
		res[i] = lever{w: g.reserve, lo: g.floor, hi: math.Max(g.reserve, g.floor)}
	}
	levels, shares := progressive(res, net)
	spare := make([]lever, len(groups))
	for i, g := range groups {
		w := 1.0
		if weighted {
			w = g.weight
		}
		// The reservation met is the base of the spare's fill; floors
		// are lower bounds, not part of it.
		base := math.Min(g.reserve*math.Min(levels[i], 1), g.reserve)
		spare[i] = lever{base: base, w: w, lo: shares[i], hi: g.hi}
	}
	_, shares = progressive(spare, net)
	return shares
}

// progressive is a progressive fill: the level rises from 0, every lever
// not yet frozen follows it, and the levers of a bottleneck freeze where
// the network stops carrying them. It returns each lever's level when it
// froze and its value. The levers' values at level 0 must be feasible.
func progressive(ls []lever, net *fleetNet) (levels, vals []float64) {
	vals = make([]float64, len(ls))
	levels = make([]float64, len(ls))
	frozen := make([]bool, len(ls))
	top := func(l lever) float64 { return (l.hi - l.base) / l.w }
	for i, l := range ls {
		vals[i] = l.at(0)
		if !(l.w > 0) || l.at(0) >= l.hi-eps {
			frozen[i] = true
			levels[i] = math.Inf(1)
		}
	}
	at := func(x float64) []float64 {
		v := slices.Clone(vals)
		for i, l := range ls {
			if !frozen[i] {
				v[i] = l.at(x)
			}
		}
		return v
	}
	x := 0.0
	for slices.Contains(frozen, false) {
		hi := x
		for i, l := range ls {
			if !frozen[i] {
				hi = math.Max(hi, top(l))
			}
		}
		if _, ok, _ := net.solve(at(hi), false); ok {
			for i, l := range ls {
				if !frozen[i] {
					vals[i], levels[i], frozen[i] = l.at(hi), hi, true
				}
			}
			break
		}
		lo := x
		for range 64 {
			if hi-lo <= 1e-12*math.Max(math.Abs(hi), 1) {
				break
			}
			mid := (lo + hi) / 2
			if _, ok, _ := net.solve(at(mid), false); ok {
				lo = mid
			} else {
				hi = mid
			}
		}
		_, _, side := net.solve(at(hi), false)
		x = lo
		any := false
		for i, l := range ls {
			if !frozen[i] && (side[i] || l.at(lo) >= l.hi-eps) {
				vals[i], levels[i], frozen[i] = l.at(lo), lo, true
				any = true
			}
		}
		if !any { // numerically stuck: stop where it is feasible
			for i, l := range ls {
				if !frozen[i] {
					vals[i], levels[i], frozen[i] = l.at(lo), lo, true
				}
			}
		}
	}
	return levels, vals
}

// split turns the groups' fleet-wide shares into rates per node: first a
// fill that gives each group's flows its share in proportion to their
// transfers (never below their floors, never past what a flow or a node
// can take), then share moved between a group's nodes (a maximum flow
// from those rates) until every group has its share.
func split(groups []*group, bounded []*unit, capN []float64, net *fleetNet) {
	ls := make([]lever, len(bounded))
	for k, u := range bounded {
		g := groups[u.group]
		ls[k] = lever{w: g.share * float64(u.streams) / float64(max(g.streams, 1)), lo: u.floor, hi: u.ub}
	}
	vals := make([]float64, len(ls))
	frozen := make([]bool, len(ls))
	for k, l := range ls {
		vals[k] = l.at(0)
		frozen[k] = !(l.w > 0) || vals[k] >= l.hi-eps
	}
	over := func(v []float64) (nodes []bool, gs []bool) {
		nodes, gs = make([]bool, len(capN)), make([]bool, len(groups))
		ns, gsum := make([]float64, len(capN)), make([]float64, len(groups))
		for k, u := range bounded {
			ns[u.node] += v[k]
			gsum[u.group] += v[k]
		}
		for j := range capN {
			nodes[j] = ns[j] > capN[j]
		}
		for i, g := range groups {
			gs[i] = gsum[i] > g.share
		}
		return nodes, gs
	}
	at := func(x float64) []float64 {
		v := slices.Clone(vals)
		for k, l := range ls {
			if !frozen[k] {
				v[k] = l.at(x)
			}
		}
		return v
	}
	bad := func(v []float64) bool {
		n, g := over(v)
		return slices.Contains(n, true) || slices.Contains(g, true)
	}
	x := 0.0
	for slices.Contains(frozen, false) {
		hi := 1.0 // at 1 every group has its whole share
		if !bad(at(hi)) {
			for k, l := range ls {
				if !frozen[k] {
					vals[k], frozen[k] = l.at(hi), true
				}
			}
			break
		}
		lo := x
		for range 64 {
			if hi-lo <= 1e-12 {
				break
			}
			if mid := (lo + hi) / 2; bad(at(mid)) {
				hi = mid
			} else {
				lo = mid
			}
		}
		nodes, gs := over(at(hi))
		x = lo
		any := false
		for k, u := range bounded {
			if !frozen[k] && (nodes[u.node] || gs[u.group] || ls[k].at(lo) >= ls[k].hi-eps) {
				vals[k], frozen[k] = ls[k].at(lo), true
				any = true
			}
		}
		if !any {
			for k, l := range ls {
				if !frozen[k] {
					vals[k], frozen[k] = l.at(lo), true
				}
			}
		}
	}
	for k, u := range bounded {
		u.rate = vals[k]
	}
	// Move share where a node was full for a group that has none
	// elsewhere: augmenting paths from the proportional rates.
	shares := make([]float64, len(groups))
	for i, g := range groups {
		shares[i] = g.share
	}
	mf, _, _ := net.solve(shares, true)
	sum := make([]float64, len(capN))
	for k, u := range bounded {
		u.rate = u.floor + mf.flow(mf.units[k])
		sum[u.node] += u.rate
	}
	// Rounding never takes a node past its capacity.
	for _, u := range bounded {
		if sum[u.node] > capN[u.node] {
			u.rate *= capN[u.node] / sum[u.node]
		}
	}
}

// fill is weighted max-min (water-filling): every active unit's rate
// grows in proportion to its weight until its need (need(u), measured
// above its current rate at the start) is met, its node's room or its
// group's room is exhausted. Rooms are updated in place. Units whose
// every constraint is unbounded become +Inf.
func fill(units []*unit, nodeRoom map[string]float64, groupRoom []float64, need func(*unit) float64) {
	type act struct {
		u    *unit
		need float64
	}
	var active []act
	for _, u := range units {
		if n := need(u); n > eps && u.w > 0 && roomOf(nodeRoom, u.Node) > eps && groupRoom[u.group] > eps {
			active = append(active, act{u, n})
		}
	}
	for len(active) > 0 {
		nodeW := map[string]float64{}
		groupW := map[int]float64{}
		for _, a := range active {
			nodeW[a.u.Node] += a.u.w
			groupW[a.u.group] += a.u.w
		}
		lambda := math.Inf(1)
		for n, w := range nodeW {
			lambda = math.Min(lambda, roomOf(nodeRoom, n)/w)
		}
		for g, w := range groupW {
			lambda = math.Min(lambda, groupRoom[g]/w)
		}
		for _, a := range active {
			lambda = math.Min(lambda, a.need/a.u.w)
		}
		if math.IsInf(lambda, 1) {
			for _, a := range active {
				a.u.rate = math.Inf(1)
			}
			return
		}
		for i := range active {
			a := &active[i]
			inc := a.u.w * lambda
			a.u.rate += inc
			a.need -= inc
			if r, ok := nodeRoom[a.u.Node]; ok {
				nodeRoom[a.u.Node] = r - inc
			}
			groupRoom[a.u.group] -= inc
		}
		active = slices.DeleteFunc(active, func(a act) bool {
			return a.need <= eps || roomOf(nodeRoom, a.u.Node) <= eps || groupRoom[a.u.group] <= eps
		})
	}
}

// roomOf is a node's room; a node not in the map is unconstrained.
func roomOf(m map[string]float64, n string) float64 {
	if r, ok := m[n]; ok {
		return r
	}
	return math.Inf(1)
}

// maxflow is a flow network with real capacities, solved by shortest
// augmenting paths (Edmonds-Karp): the allocation's networks have a few
// dozen vertices.
type maxflow struct {
	adj  [][]int   // edges out of each vertex
	to   []int     // edge e's head; e^1 is its reverse
	res  []float64 // residual capacity
	orig []float64 // capacity (0 for reverse edges)
	tol  float64
	// units are the flow-to-node edges, in fleetNet.bounded's order.
	units []int
}

func newMaxflow(n int, tol float64) *maxflow {
	return &maxflow{adj: make([][]int, n), tol: tol}
}

func (m *maxflow) add(a, b int, c float64) int {
	e := len(m.to)
	m.to = append(m.to, b, a)
	m.res = append(m.res, c, 0)
	m.orig = append(m.orig, c, 0)
	m.adj[a] = append(m.adj[a], e)
	m.adj[b] = append(m.adj[b], e+1)
	return e
}

// push sends x along edge e (a starting flow).
func (m *maxflow) push(e int, x float64) {
	m.res[e] -= x
	m.res[e^1] += x
}

// flow is what edge e carries.
func (m *maxflow) flow(e int) float64 { return math.Max(m.orig[e]-m.res[e], 0) }

// run augments from s to t until no path has room and returns the flow
// added.
func (m *maxflow) run(s, t int) float64 {
	var total float64
	prev := make([]int, len(m.adj))
	for {
		for i := range prev {
			prev[i] = -1
		}
		prev[s] = -2
		queue := []int{s}
		for len(queue) > 0 && prev[t] == -1 {
			v := queue[0]
			queue = queue[1:]
			for _, e := range m.adj[v] {
				if w := m.to[e]; prev[w] == -1 && m.res[e] > m.tol {
					prev[w] = e
					queue = append(queue, w)
				}
			}
		}
		if prev[t] == -1 {
			return total
		}
		x := math.Inf(1)
		for v := t; v != s; v = m.to[prev[v]^1] {
			x = math.Min(x, m.res[prev[v]])
		}
		for v := t; v != s; v = m.to[prev[v]^1] {
			m.push(prev[v], x)
		}
		total += x
	}
}

// reach marks the vertices reachable from s through edges with room: the
// source side of a minimum cut once run has ended.
func (m *maxflow) reach(s int) []bool {
	seen := make([]bool, len(m.adj))
	seen[s] = true
	queue := []int{s}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, e := range m.adj[v] {
			if w := m.to[e]; !seen[w] && m.res[e] > m.tol {
				seen[w] = true
				queue = append(queue, w)
			}
		}
	}
	return seen
}
