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

// Crystal is Crystal's Algorithm 1 made demand-aware: (a) reserve
// min(reservation, demand) per tenant and class, split over the nodes
// where it has demand in proportion to its transfers, tenants with fewer
// transfers first; (b) on a node whose reservations exceed its capacity,
// move a tenant's share to another of its nodes with room, else scale the
// node's reservations down proportionally; (c) share the spare by
// weighted max-min over unmet demand, capped by limits; (d) hand what
// nobody asked for out the same way, so no capacity is held back.
type Crystal struct{}

// Name implements Algorithm.
func (Crystal) Name() string { return "crystal" }

// Allocate implements Algorithm.
func (Crystal) Allocate(p Problem) Allocation { return allocate(p, true, true) }

// MaxMin is max-min fair share (PADLL): every tenant and class the same
// share, a flow never given more than it demands, what it leaves shared
// again among the others; reservations and weights are ignored, limits
// honoured. Capacity nobody asks for is handed out the same way.
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

// unit is one flow on one node during allocation.
type unit struct {
	UnitKey
	group   int
	streams int
	want    float64
	w       float64 // weight in the max-min fills
	rate    float64
}

type group struct {
	tenant  string
	class   Class
	units   []*unit
	streams int
	reserve float64 // min(reservation, demand)
	limit   float64
	weight  float64
}

const eps = 1e-6 // bytes/s: below this, a room or a need is exhausted

func allocate(p Problem, reserve, weighted bool) Allocation {
	groups, units := buildGroups(p, reserve)
	capOf := func(n string) float64 {
		if c, ok := p.Capacity[n]; ok && c > 0 {
			return c
		}
		return math.Inf(1)
	}
	if reserve {
		reserveSLOs(groups, capOf)
	}
	for _, g := range groups {
		for _, u := range g.units {
			w := 1.0
			if weighted {
				w = g.weight
			}
			u.w = w * float64(max(u.streams, 1)) / float64(max(g.streams, 1))
		}
	}
	nodeRoom := map[string]float64{}
	for _, u := range units {
		nodeRoom[u.Node] = capOf(u.Node)
	}
	groupRoom := make([]float64, len(groups))
	for i, g := range groups {
		groupRoom[i] = g.limit
		for _, u := range g.units {
			nodeRoom[u.Node] -= u.rate
			groupRoom[i] -= u.rate
		}
	}
	// (c) spare over unmet demand, then (d) what is left over to everyone.
	fill(units, nodeRoom, groupRoom, func(u *unit) float64 { return u.want - u.rate })
	fill(units, nodeRoom, groupRoom, func(*unit) float64 { return math.Inf(1) })
	out := Allocation{}
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
		u := &unit{UnitKey: UnitKey{d.Tenant, d.Class, d.Node}, group: len(groups) - 1, streams: max(d.Streams, 1), want: d.Want}
		if slices.ContainsFunc(g.units, func(o *unit) bool { return o.Node == d.Node }) {
			continue // one demand per flow and node
		}
		g.units = append(g.units, u)
		g.streams += u.streams
		units = append(units, u)
	}
	for _, g := range groups {
		var want float64
		for _, u := range g.units {
			want += u.want
		}
		g.reserve = math.Min(g.reserve, want)
	}
	return groups, units
}

// reserveSLOs is steps (a) and (b) of Algorithm 1.
func reserveSLOs(groups []*group, capOf func(string) float64) {
	order := slices.Clone(groups)
	// Fewer transfers have fewer chances to meet their SLO: they go first.
	slices.SortStableFunc(order, func(a, b *group) int { return cmp.Compare(a.streams, b.streams) })
	for _, g := range order {
		if g.reserve <= 0 {
			continue
		}
		// Split over the group's nodes by transfers, never past a node's
		// demand (a max-min fill inside the group).
		for _, u := range g.units {
			u.w = float64(u.streams)
		}
		room := make([]float64, len(groups))
		room[g.units[0].group] = g.reserve
		fill(g.units, map[string]float64{}, room, func(u *unit) float64 { return u.want - u.rate })
	}
	reserved := map[string]float64{}
	for _, g := range groups {
		for _, u := range g.units {
			reserved[u.Node] += u.rate
		}
	}
	nodes := make([]string, 0, len(reserved))
	for n := range reserved {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	for _, n := range nodes {
		excess := reserved[n] - capOf(n)
		if excess <= eps {
			continue
		}
		// Move share of tenants with transfers elsewhere, most transfers
		// first: they are the ones that can use another node.
		for i := len(order) - 1; i >= 0 && excess > eps; i-- {
			g := order[i]
			ui := slices.IndexFunc(g.units, func(u *unit) bool { return u.Node == n })
			if ui < 0 {
				continue
			}
			from := g.units[ui]
			for _, to := range g.units {
				if to == from || excess <= eps || from.rate <= eps {
					continue
				}
				room := math.Min(capOf(to.Node)-reserved[to.Node], to.want-to.rate)
				m := math.Min(math.Min(excess, from.rate), room)
				if m <= eps {
					continue
				}
				from.rate -= m
				to.rate += m
				reserved[n] -= m
				reserved[to.Node] += m
				excess -= m
			}
		}
		if excess > eps {
			scale := capOf(n) / reserved[n]
			for _, g := range groups {
				for _, u := range g.units {
					if u.Node == n {
						u.rate *= scale
					}
				}
			}
			reserved[n] = capOf(n)
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
