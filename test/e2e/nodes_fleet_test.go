package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/admin"
)

// In a fleet the controller, which serves no requests, lists every
// gateway with its devices (type, scheduler, whether I/O priorities
// work) as the gateways describe themselves in their QoS reports on the
// bus; a gateway lists itself and the others the same way.
func TestFleetNodes(t *testing.T) {
	c := startCluster(t, clusterOptions{Gateways: 2, Controllers: 1, Env: []string{"FACET_QOS_PERIOD=200ms"}})
	ctl := c.controllers[0]
	list := func() admin.NodeList {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+ctl.adminAddr+"/v1/nodes", nil)
		req.Header.Set("Authorization", "Bearer "+ctl.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var nl admin.NodeList
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&nl) != nil {
			t.Fatalf("controller GET /v1/nodes: %d", resp.StatusCode)
		}
		return nl
	}
	// Both gateways are listed within a few report periods (bounded).
	var nl admin.NodeList
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if nl = list(); len(nl.Nodes) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the controller lists %d nodes, want the 2 gateways: %+v", len(nl.Nodes), nl)
		}
	}
	local, err := c.gw[0].nodesLocal(t)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nl.Nodes {
		if n.Backend != "remote" || n.Reported == nil || n.Note == "" {
			t.Errorf("node %+v: want a remote-backend gateway, with when it reported and why it has no local devices", n)
		}
		// The devices are the machine's, as the gateway read them from /sys.
		if len(n.Disks) != len(local.Disks) {
			t.Errorf("node %s: %d disks, the gateway itself shows %d", n.Name, len(n.Disks), len(local.Disks))
		}
		for i, d := range n.Disks {
			if i < len(local.Disks) && (d.Name != local.Disks[i].Name || d.Scheduler != local.Disks[i].Scheduler || d.Priorities != local.Disks[i].Priorities || d.PrioritiesNote == "") {
				t.Errorf("node %s disk %+v, the gateway shows %+v", n.Name, d, local.Disks[i])
			}
		}
	}
	// A gateway lists the whole fleet too: itself first-hand, the other
	// from the bus.
	out, err := c.gw[1].ctl(t, "node", "list", "-o", "json")
	var gl admin.NodeList
	if err != nil || json.Unmarshal(out, &gl) != nil || len(gl.Nodes) != 2 ||
		!slices.ContainsFunc(gl.Nodes, func(n admin.Node) bool { return n.Reported == nil }) ||
		!slices.ContainsFunc(gl.Nodes, func(n admin.Node) bool { return n.Reported != nil }) {
		t.Fatalf("gateway's nodes: %v %s", err, out)
	}
}

// nodesLocal is the node's own entry in its GET /v1/nodes.
func (s *server) nodesLocal(t *testing.T) (admin.Node, error) {
	t.Helper()
	out, err := s.ctl(t, "node", "list", "-o", "json")
	if err != nil {
		return admin.Node{}, err
	}
	var nl admin.NodeList
	if err := json.Unmarshal(out, &nl); err != nil {
		return admin.Node{}, err
	}
	for _, n := range nl.Nodes {
		if n.Reported == nil {
			return n, nil
		}
	}
	return admin.Node{}, err
}
