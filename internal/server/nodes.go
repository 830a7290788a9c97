package server

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/qos"
)

// GET /v1/nodes in a fleet: every node describes itself (its devices,
// their type and scheduler, whether I/O priorities work) in its QoS
// reports on the bus, every qos.HostEvery reports, and any process with
// the fleet view (a gateway, the controller role) lists them all.

// describe makes this node's QoS reports carry its description.
func describe(agent *qos.Agent, self admin.NodeSource) {
	agent.Describe(func(ctx context.Context) json.RawMessage {
		ns, err := self.Nodes(ctx)
		if err != nil || len(ns) == 0 {
			return nil
		}
		data, err := json.Marshal(ns[0])
		if err != nil {
			return nil
		}
		return data
	})
}

// fleetNodes lists self (nil for a process that serves no requests) and
// every other live node of the fleet as it last described itself.
type fleetNodes struct {
	self  admin.NodeSource
	fleet *qos.Fleet
}

func (f fleetNodes) Nodes(ctx context.Context) ([]admin.Node, error) {
	out := []admin.Node{}
	if f.self != nil {
		ns, err := f.self.Nodes(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, ns...)
	}
	for _, h := range f.fleet.Hosts() {
		if slices.ContainsFunc(out, func(n admin.Node) bool { return n.Name == h.Node }) {
			continue // this node: its own view is fresher
		}
		var n admin.Node
		if err := json.Unmarshal(h.Host, &n); err != nil {
			continue
		}
		// The report's node is who sent it, whatever the body says.
		seen := h.Seen.UTC()
		n.Name, n.Reported = h.Node, &seen
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b admin.Node) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
