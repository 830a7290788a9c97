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
	// Storage says whether the node's local storage takes writes
	// (writable, full, read-only, failing); absent with a remote backend.
	Storage string `json:"storage,omitempty"`
	// Cache is the node's object cache; absent on a node without one.
	Cache *NodeCache `json:"cache,omitempty"`
	// Reported is when another node of the fleet last described itself
	// on the bus (its QoS reports); absent for the node answering.
	Reported *time.Time `json:"reported,omitempty"`
}

// NodeCache is a node's object cache (the caching filter's store on its
// local fast disk): what it holds, and its counters since the node
// started. The same figures are in /metrics as facet_cache_*.
type NodeCache struct {
	Entries int    `json:"entries"`
	Bytes   int64  `json:"bytes"`
	Hits    uint64 `json:"hits"`
	Misses  uint64 `json:"misses"`
	// HitRatio is hits over lookups since start (0 before any).
	HitRatio      float64 `json:"hit_ratio"`
	ServedBytes   uint64  `json:"served_bytes"`
	Admissions    uint64  `json:"admissions"`
	Evictions     uint64  `json:"evictions"`
	Stale         uint64  `json:"stale"`
	Invalidations uint64  `json:"invalidations"`
	// BusConnected says whether invalidations from other gateways reach
	// this one (a stale entry is never served either way: every hit is
	// checked against the object's ETag).
	BusConnected bool `json:"bus_connected"`
}

// CacheReporter reports a node's object cache.
type CacheReporter interface {
	CacheStatus() NodeCache
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
// backend: its devices when backend has local ones, and its object cache
// when cache is not nil.
func LocalNode(name string, backend any, cache CacheReporter) NodeSource {
	return localNode{name: name, backend: backend, cache: cache}
}

type localNode struct {
	name    string
	backend any
	cache   CacheReporter
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
	if p, ok := n.backend.(StorageProbe); ok {
		out.Storage = storageState(p.ProbeWrite())
	}
	if n.cache != nil {
		c := n.cache.CacheStatus()
		out.Cache = &c
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
