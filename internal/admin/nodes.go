package admin

import (
	"context"
	"net/http"
	"time"

	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/sysdev"
)

// GET /nodes: the gateways and, for the embedded backend, the block
// devices under their data, with the device type, the I/O scheduler and
// whether I/O priorities can work there. In a fleet every node lists the
// others too, as they describe themselves on the bus. Where they cannot, the report
// says so in words rather than pretend.

// Node describes one gateway.
type Node struct {
	Name string `json:"name"`
	// Backend is "fs" (embedded, with local devices) or "remote".
	Backend string `json:"backend"`
	// IO is how the embedded backend reads for GETs; nil for a remote
	// backend.
	IO      *storage.IOStatus  `json:"io,omitempty"`
	Devices []sysdev.Placement `json:"devices"`
	// Disks are all the node's block devices (/sys/block) with their
	// type and scheduler, whether Facet's data is on them or not.
	Disks []sysdev.Device `json:"disks"`
	Note  string          `json:"note,omitempty"`
	// Reported is when another node of the fleet last described itself
	// on the bus (its QoS reports); absent for the node answering.
	Reported *time.Time `json:"reported,omitempty"`
}

// NodeList is the body of GET /nodes.
type NodeList struct {
	Nodes []Node `json:"nodes"`
}

// NodeSource reports the nodes.
type NodeSource interface {
	Nodes(ctx context.Context) ([]Node, error)
}

// localDevices is what the embedded backend tells about its devices.
type localDevices interface {
	IOStatus() storage.IOStatus
	Devices() ([]sysdev.Placement, error)
}

// LocalNode is the NodeSource of a single gateway named name over
// backend: its devices when backend has local ones.
func LocalNode(name string, backend any) NodeSource { return localNode{name: name, backend: backend} }

type localNode struct {
	name    string
	backend any
}

func (n localNode) Nodes(ctx context.Context) ([]Node, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := Node{Name: n.name, Backend: "remote", Devices: []sysdev.Placement{}, Disks: []sysdev.Device{},
		Note: "object bytes live in a remote store: no local device, no I/O priorities"}
	if disks, err := (sysdev.Reader{}).Disks(); err == nil {
		out.Disks = disks
	}
	if ld, ok := n.backend.(localDevices); ok {
		st := ld.IOStatus()
		devs, err := ld.Devices()
		if err != nil {
			return nil, err
		}
		out.Backend, out.IO, out.Devices, out.Note = "fs", &st, devs, ""
	}
	return []Node{out}, nil
}

func (h *handler) listNodes(w http.ResponseWriter, r *http.Request) error {
	if h.nodes == nil {
		return apiErr(http.StatusNotImplemented, "NotImplemented", "this server does not report its nodes")
	}
	ns, err := h.nodes.Nodes(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, NodeList{Nodes: ns})
	return nil
}
