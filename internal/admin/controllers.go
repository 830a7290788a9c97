package admin

import (
	"context"
	"net/http"
	"time"
)

// ControllerSource lists the controllers that run the dynamic policies
// and the global control loops (internal/control adapts the supervisor).
type ControllerSource interface {
	Controllers(ctx context.Context) ([]ControllerStatus, error)
}

// ControllerStatus describes one supervised controller.
type ControllerStatus struct {
	ID string `json:"id"`
	// Kind is automation (compiled from a dynamic policy), global, or
	// external (another process, listed by its heartbeats).
	Kind string `json:"kind"`
	// Policy is the policy an automation controller runs.
	Policy string `json:"policy,omitempty"`
	// State is running, backoff after repeated failures, or disabled
	// (serve --disable-controller).
	State string `json:"state"`
	// Active is true while the controller's output is in force: for an
	// automation controller, its policy is activated.
	Active bool `json:"active"`
	// Restarts counts the controller's failures (panics, errors), each
	// followed by a restart.
	Restarts    int    `json:"restarts"`
	LastFailure string `json:"last_failure,omitempty"`
	// LastEvaluation is when the controller last evaluated.
	LastEvaluation *time.Time `json:"last_evaluation,omitempty"`
	// Instance and LastSeen are an external controller's: the run that
	// sent its last heartbeat, and when it arrived.
	Instance string     `json:"instance,omitempty"`
	LastSeen *time.Time `json:"last_seen,omitempty"`
	// Targets are the metric targets it follows ("tenant:t1", "bucket:t1/b1").
	Targets []string `json:"targets,omitempty"`
	// Values are the latest metric values it evaluated.
	Values []ControllerValue `json:"values,omitempty"`
	// Reason says why the controller is in its state.
	Reason    string `json:"reason,omitempty"`
	LastError string `json:"last_error,omitempty"`
}

// ControllerValue is a metric value a controller evaluated.
type ControllerValue struct {
	Target string    `json:"target"`
	Metric string    `json:"metric"`
	Value  float64   `json:"value"`
	Period time.Time `json:"period"`
}

// ControllerList is the body of GET /controllers, sorted by id.
type ControllerList struct {
	Controllers []ControllerStatus `json:"controllers"`
}

var errNoControllers = apiErr(http.StatusNotImplemented, "NotImplemented", "this server runs no controllers")

func (h *handler) listControllers(w http.ResponseWriter, r *http.Request) error {
	if h.controllers == nil {
		return errNoControllers
	}
	cs, err := h.controllers.Controllers(r.Context())
	if err != nil {
		return err
	}
	if cs == nil {
		cs = []ControllerStatus{}
	}
	writeJSON(w, http.StatusOK, ControllerList{Controllers: cs})
	return nil
}
