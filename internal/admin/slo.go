package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// SLOs and the bandwidth views (the sources' /bw API):
//
//	GET    /slos                every tenant's SLO: API records and those policies set
//	GET    /slos/{name}         one tenant's effective SLO
//	PUT    /slos/{name}         set a tenant's SLO record (rates as "30MB/s" or bytes/s)
//	DELETE /slos/{name}         remove the record (policies' SLOs stay)
//	GET    /bw                  per node and flow: rate asked (assigned) vs served, streams
//	GET    /bw/osinfo           per node: capacity, asked vs served, active streams
//	GET    /bw/nodes/{node}     one node's flows

// SLOSpec is the body of PUT /slos/{name}: each rate is a string with a
// unit ("30MB/s", as in the DSL) or a number of bytes per second; weight
// is a number, ops a number of operations per second. Omitted fields are
// unset.
type SLOSpec map[string]any

// SLO is a tenant's SLO as the API shows it. Rates are bytes per second.
type SLO struct {
	Tenant string `json:"tenant"`
	// Class is the request class a policy naming a CONTEXT gives this
	// SLO ("" for the tenant's own).
	Class string `json:"class,omitempty"`
	// Source is "api" (PUT /slos) or "policy" (SET bandwidth); an API
	// record takes precedence over policies for its tenant.
	Source      string     `json:"source"`
	Policy      string     `json:"policy,omitempty"` // the policy id, for source policy
	Get         float64    `json:"get,omitempty"`
	Put         float64    `json:"put,omitempty"`
	Reservation float64    `json:"reservation,omitempty"`
	Limit       float64    `json:"limit,omitempty"`
	Weight      float64    `json:"weight,omitempty"`
	Ops         float64    `json:"ops,omitempty"`
	Background  float64    `json:"background,omitempty"`
	Updated     *time.Time `json:"updated,omitempty"`
}

// SLOList is the body of GET /slos.
type SLOList struct {
	SLOs []SLO `json:"slos"`
}

// BWFlow is one flow on one node in the /bw views.
type BWFlow struct {
	Tenant string `json:"tenant"`
	Class  string `json:"class"`
	// Asked is the rate in force (bytes/s, 0: unlimited) and Source where
	// it comes from: assigned (controller), static (SLO limit) or none.
	Asked    float64 `json:"asked"`
	Source   string  `json:"source"`
	Served   float64 `json:"served"`
	Streams  int     `json:"streams"`
	Active   int     `json:"active"`
	Waited   float64 `json:"waited_seconds"`
	Ops      float64 `json:"ops"`
	Rejected float64 `json:"rejected"`
}

// BWNode is one node in the /bw views.
type BWNode struct {
	Node  string `json:"node"`
	Stage string `json:"stage"`
	// Device is what the node's bytes go through (its stage: the
	// gateway's shaping point); Capacity in bytes/s, 0 when estimated.
	Device   string  `json:"device"`
	Capacity float64 `json:"capacity"`
	// Asked is the sum of the flows' rates in force, 0 when one of them
	// is unlimited.
	Asked    float64   `json:"asked"`
	Served   float64   `json:"served"`
	Streams  int       `json:"streams"`
	Assigner string    `json:"assigner,omitempty"`
	Updated  time.Time `json:"updated"`
	Flows    []BWFlow  `json:"flows,omitempty"`
	// Devices are the node's storage devices (embedded backend): what
	// each moved and the streams read from it by threads of their own,
	// their flows' needs (asked) and what they read (served).
	Devices []BWDevice `json:"devices,omitempty"`
}

// BWDevice is one storage device of a node in the /bw views.
type BWDevice struct {
	Device string `json:"device"`
	// Served is bytes/s the device read and wrote over the last period,
	// all of it (page cache misses, other processes); -1 when unknown.
	Served float64 `json:"served"`
	// Asked is the streams' needs summed (bytes/s).
	Asked   float64    `json:"asked"`
	Streams []BWThread `json:"streams"`
}

// BWThread is one stream on a device: its OS thread, its flow
// (tenant/class) and the bandwidth it needs when it has a reservation, and
// bytes/s it read over the last period.
type BWThread struct {
	TID    int     `json:"tid"`
	Flow   string  `json:"flow,omitempty"`
	Need   float64 `json:"need,omitempty"`
	Served float64 `json:"served"`
}

// BWView is the body of GET /bw and /bw/osinfo.
type BWView struct {
	// Controller is the bandwidth controller's algorithm and its last
	// assignment, when one was seen.
	Algorithm string   `json:"algorithm,omitempty"`
	Seq       uint64   `json:"seq,omitempty"`
	Nodes     []BWNode `json:"nodes"`
}

// ErrInvalidSLO marks an SLO spec that does not validate.
var ErrInvalidSLO = errors.New("invalid SLO")

// ErrNoSuchSLO marks a tenant without an SLO.
var ErrNoSuchSLO = errors.New("no such SLO")

// QoSService serves SLOs and the bandwidth views.
type QoSService interface {
	ListSLOs(ctx context.Context) ([]SLO, error)
	GetSLO(ctx context.Context, tenant string) (SLO, error)
	PutSLO(ctx context.Context, tenant string, spec SLOSpec) (SLO, error)
	DeleteSLO(ctx context.Context, tenant string) error
	Bandwidth(ctx context.Context) (BWView, error)
}

func (h *handler) qosOrFail() (QoSService, error) {
	if h.qos == nil {
		return nil, apiErr(http.StatusNotImplemented, "NotImplemented", "this server does not run QoS")
	}
	return h.qos, nil
}

func sloErr(err error, tenant string) error {
	switch {
	case errors.Is(err, ErrInvalidSLO):
		return apiErr(http.StatusBadRequest, "InvalidSLO", detail(err, ErrInvalidSLO))
	case errors.Is(err, ErrNoSuchSLO):
		return apiErr(http.StatusNotFound, "NoSuchSLO", fmt.Sprintf("tenant %q has no SLO", tenant))
	}
	return err
}

func (h *handler) listSLOs(w http.ResponseWriter, r *http.Request) error {
	q, err := h.qosOrFail()
	if err != nil {
		return err
	}
	list, err := q.ListSLOs(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, SLOList{SLOs: list})
	return nil
}

func (h *handler) getSLO(w http.ResponseWriter, r *http.Request) error {
	q, err := h.qosOrFail()
	if err != nil {
		return err
	}
	s, err := q.GetSLO(r.Context(), r.PathValue("name"))
	if err != nil {
		return sloErr(err, r.PathValue("name"))
	}
	writeJSON(w, http.StatusOK, s)
	return nil
}

func (h *handler) putSLO(w http.ResponseWriter, r *http.Request) error {
	q, err := h.qosOrFail()
	if err != nil {
		return err
	}
	var spec SLOSpec
	if err := decodeBody(r, w, &spec); err != nil {
		return err
	}
	s, err := q.PutSLO(r.Context(), r.PathValue("name"), spec)
	if err != nil {
		return sloErr(err, r.PathValue("name"))
	}
	writeJSON(w, http.StatusOK, s)
	return nil
}

func (h *handler) deleteSLO(w http.ResponseWriter, r *http.Request) error {
	q, err := h.qosOrFail()
	if err != nil {
		return err
	}
	if err := q.DeleteSLO(r.Context(), r.PathValue("name")); err != nil {
		return sloErr(err, r.PathValue("name"))
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// bwView reads the bandwidth view.
func (h *handler) bwView(r *http.Request) (BWView, error) {
	q, err := h.qosOrFail()
	if err != nil {
		return BWView{}, err
	}
	return q.Bandwidth(r.Context())
}

func (h *handler) bandwidth(w http.ResponseWriter, r *http.Request) error {
	v, err := h.bwView(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// osinfo is /bw without the flows: one line per node.
func (h *handler) bandwidthOSInfo(w http.ResponseWriter, r *http.Request) error {
	v, err := h.bwView(r)
	if err != nil {
		return err
	}
	for i := range v.Nodes {
		v.Nodes[i].Flows = nil
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (h *handler) bandwidthNode(w http.ResponseWriter, r *http.Request) error {
	v, err := h.bwView(r)
	if err != nil {
		return err
	}
	for _, n := range v.Nodes {
		if n.Node == r.PathValue("node") {
			writeJSON(w, http.StatusOK, n)
			return nil
		}
	}
	return apiErr(http.StatusNotFound, "NoSuchNode", fmt.Sprintf("no live node %q reports bandwidth", r.PathValue("node")))
}
