package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/facet-sds/facet/internal/flowctx"
)

// SLOs and the bandwidth views (the sources' /bw API):
//
//	GET    /slos                every SLO, tenants' and classes': API records and those policies set
//	GET    /slos/{name}         one tenant's effective SLO
//	PUT    /slos/{name}         set a tenant's SLO record (rates as "30MB/s" or bytes/s)
//	DELETE /slos/{name}         remove the record (policies' SLOs stay)
//
// With ?class=NAME the last three address the SLO of the tenant's request
// class NAME instead (the API's counterpart of a policy naming a
// CONTEXT). At each level an API record takes precedence over policies,
// whole: a tenant's record over the SET bandwidth policies for the tenant,
// a class's over the CONTEXT policies for that tenant and class.
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
	// Class is the request class this SLO governs, set by a policy
	// naming a CONTEXT or PUT /slos/{name}?class= ("" for the tenant's
	// own).
	Class string `json:"class,omitempty"`
	// Source is "api" (PUT /slos) or "policy" (SET bandwidth); an API
	// record takes precedence over policies for its tenant, or for its
	// tenant's class.
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
	Asked   float64 `json:"asked"`
	Source  string  `json:"source"`
	Served  float64 `json:"served"`
	Streams int     `json:"streams"`
	Active  int     `json:"active"`
	Waited  float64 `json:"waited_seconds"`
	// OpsRate is the operations cap in force on the node (ops/s, 0:
	// none) and OpsSource where it comes from, as Source for bytes.
	OpsRate   float64 `json:"ops_rate"`
	OpsSource string  `json:"ops_source,omitempty"`
	// Ops is operations admitted per second, Queued those of them that
	// waited for their turn, Rejected those refused with SlowDown, and
	// InLine the refused ones holding a place in line for their retry.
	Ops      float64 `json:"ops"`
	Queued   float64 `json:"queued"`
	Rejected float64 `json:"rejected"`
	InLine   int     `json:"in_line"`
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

// ErrNoSuchSLO marks a tenant (or a tenant's class) without an SLO.
var ErrNoSuchSLO = errors.New("no such SLO")

// QoSService serves SLOs and the bandwidth views. A class "" is the
// tenant's own SLO, any other the SLO of that request class of the tenant
// (a valid class name: the handlers check it).
type QoSService interface {
	ListSLOs(ctx context.Context) ([]SLO, error)
	GetSLO(ctx context.Context, tenant, class string) (SLO, error)
	PutSLO(ctx context.Context, tenant, class string, spec SLOSpec) (SLO, error)
	DeleteSLO(ctx context.Context, tenant, class string) error
	Bandwidth(ctx context.Context) (BWView, error)
}

func (h *handler) qosOrFail() (QoSService, error) {
	if h.qos == nil {
		return nil, apiErr(http.StatusNotImplemented, "NotImplemented", "this server does not run QoS")
	}
	return h.qos, nil
}

func sloErr(err error, tenant, class string) error {
	switch {
	case errors.Is(err, ErrInvalidSLO):
		return apiErr(http.StatusBadRequest, "InvalidSLO", detail(err, ErrInvalidSLO))
	case errors.Is(err, ErrNoSuchSLO) && class != "":
		return apiErr(http.StatusNotFound, "NoSuchSLO", fmt.Sprintf("tenant %q has no SLO for class %q", tenant, class))
	case errors.Is(err, ErrNoSuchSLO):
		return apiErr(http.StatusNotFound, "NoSuchSLO", fmt.Sprintf("tenant %q has no SLO", tenant))
	}
	return err
}

// sloTarget is the tenant of /slos/{name} and the class its ?class= names
// ("" for the tenant's own SLO); an empty or malformed class is a 400,
// not the tenant's SLO by mistake.
func sloTarget(r *http.Request) (tenant, class string, err error) {
	tenant = r.PathValue("name")
	q := r.URL.Query()
	if !q.Has("class") {
		return tenant, "", nil
	}
	if vs := q["class"]; len(vs) > 1 {
		return "", "", apiErr(http.StatusBadRequest, "InvalidClassName", "give class once")
	}
	class = q.Get("class")
	if !flowctx.ValidClass(class) {
		return "", "", apiErr(http.StatusBadRequest, "InvalidClassName",
			fmt.Sprintf("invalid request class %q: want 1-63 characters [a-z0-9][a-z0-9_.-]*", class))
	}
	return tenant, class, nil
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
	tenant, class, err := sloTarget(r)
	if err != nil {
		return err
	}
	s, err := q.GetSLO(r.Context(), tenant, class)
	if err != nil {
		return sloErr(err, tenant, class)
	}
	writeJSON(w, http.StatusOK, s)
	return nil
}

func (h *handler) putSLO(w http.ResponseWriter, r *http.Request) error {
	q, err := h.qosOrFail()
	if err != nil {
		return err
	}
	tenant, class, err := sloTarget(r)
	if err != nil {
		return err
	}
	var spec SLOSpec
	if err := decodeBody(r, w, &spec); err != nil {
		return err
	}
	s, err := q.PutSLO(r.Context(), tenant, class, spec)
	if err != nil {
		return sloErr(err, tenant, class)
	}
	writeJSON(w, http.StatusOK, s)
	return nil
}

func (h *handler) deleteSLO(w http.ResponseWriter, r *http.Request) error {
	q, err := h.qosOrFail()
	if err != nil {
		return err
	}
	tenant, class, err := sloTarget(r)
	if err != nil {
		return err
	}
	if err := q.DeleteSLO(r.Context(), tenant, class); err != nil {
		return sloErr(err, tenant, class)
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
