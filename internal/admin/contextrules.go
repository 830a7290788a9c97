package admin

import (
	"context"
	"errors"
	"net/http"

	"github.com/facet-sds/facet/internal/flowctx"
)

// Request classes (internal/flowctx): a tenant's context rules, which map
// requests without an x-facet-context class to a class by key prefix, user
// agent or metadata, and the tenant × class flows the gateway enforces.

// ContextService stores tenants' context rules and reports class flows;
// the server implements it over the metadata store and the enforcer.
type ContextService interface {
	Rules(ctx context.Context, tenant string) (flowctx.Rules, error)
	SetRules(ctx context.Context, tenant string, r flowctx.Rules) error
	DeleteRules(ctx context.Context, tenant string) error
	Flows() []flowctx.FlowStats
	// Controller names the class controller in force (limits, priority).
	Controller() string
}

// ErrNoContextRules is wrapped by a ContextService for a tenant without
// rules.
var ErrNoContextRules = errors.New("no context rules")

// ContextFlows is the body of GET /context/flows.
type ContextFlows struct {
	Controller string              `json:"controller"`
	Flows      []flowctx.FlowStats `json:"flows"`
}

var errNoContext = apiErr(http.StatusNotImplemented, "NotImplemented", "this server does not classify requests")

func (h *handler) getContextRules(w http.ResponseWriter, r *http.Request) error {
	if h.context == nil {
		return errNoContext
	}
	name := r.PathValue("name")
	rules, err := h.context.Rules(r.Context(), name)
	if errors.Is(err, ErrNoContextRules) {
		return apiErr(http.StatusNotFound, "NoSuchContextRules", "tenant "+quote(name)+" has no context rules: its requests without a class go to class "+flowctx.DefaultClass)
	}
	if err != nil {
		return err
	}
	if rules.Rules == nil {
		rules.Rules = []flowctx.Rule{}
	}
	writeJSON(w, http.StatusOK, rules)
	return nil
}

func (h *handler) putContextRules(w http.ResponseWriter, r *http.Request) error {
	if h.context == nil {
		return errNoContext
	}
	var rules flowctx.Rules
	if err := decodeBody(r, w, &rules); err != nil {
		return err
	}
	if err := rules.Validate(); err != nil {
		return apiErr(http.StatusBadRequest, "InvalidContextRules", detail(err, flowctx.ErrInvalidRules))
	}
	if err := h.context.SetRules(r.Context(), r.PathValue("name"), rules); err != nil {
		return err
	}
	if rules.Rules == nil {
		rules.Rules = []flowctx.Rule{}
	}
	writeJSON(w, http.StatusOK, rules)
	return nil
}

func (h *handler) deleteContextRules(w http.ResponseWriter, r *http.Request) error {
	if h.context == nil {
		return errNoContext
	}
	name := r.PathValue("name")
	err := h.context.DeleteRules(r.Context(), name)
	if errors.Is(err, ErrNoContextRules) {
		return apiErr(http.StatusNotFound, "NoSuchContextRules", "tenant "+quote(name)+" has no context rules")
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *handler) contextFlows(w http.ResponseWriter, _ *http.Request) error {
	if h.context == nil {
		return errNoContext
	}
	writeJSON(w, http.StatusOK, ContextFlows{Controller: h.context.Controller(), Flows: h.context.Flows()})
	return nil
}

func quote(s string) string { return `"` + s + `"` }
