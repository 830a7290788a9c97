package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/flowctx"
	"github.com/facet-sds/facet/internal/meta"
)

// ContextRules is the control API's request-class service
// (admin.ContextService): the tenants' classification rules, stored and
// applied on this node at once (the others at their next poll), and the
// class flows the enforcer runs.
type ContextRules struct {
	store    *meta.Store
	registry *flowctx.Registry
	enforcer *flowctx.Enforcer
}

var _ admin.ContextService = (*ContextRules)(nil)

// NewContextRules returns the service over store, the node's rule
// registry and its enforcer of class flows.
func NewContextRules(store *meta.Store, registry *flowctx.Registry, enforcer *flowctx.Enforcer) *ContextRules {
	return &ContextRules{store: store, registry: registry, enforcer: enforcer}
}

func (c *ContextRules) Rules(ctx context.Context, tenant string) (flowctx.Rules, error) {
	if _, err := c.store.GetTenant(ctx, tenant); err != nil {
		return flowctx.Rules{}, err
	}
	raw, err := c.store.ContextRules(ctx, tenant)
	if errors.Is(err, meta.ErrContextRulesNotFound) {
		return flowctx.Rules{}, fmt.Errorf("%w: %v", admin.ErrNoContextRules, err)
	}
	if err != nil {
		return flowctx.Rules{}, err
	}
	return flowctx.ParseRules(raw)
}

func (c *ContextRules) SetRules(ctx context.Context, tenant string, r flowctx.Rules) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := c.store.SetContextRules(ctx, tenant, raw); err != nil {
		return err
	}
	// This gateway applies them at once; the others at their next poll.
	return c.registry.Reload(ctx)
}

func (c *ContextRules) DeleteRules(ctx context.Context, tenant string) error {
	if _, err := c.store.GetTenant(ctx, tenant); err != nil {
		return err
	}
	err := c.store.DeleteContextRules(ctx, tenant)
	if errors.Is(err, meta.ErrContextRulesNotFound) {
		return fmt.Errorf("%w: %v", admin.ErrNoContextRules, err)
	}
	if err != nil {
		return err
	}
	return c.registry.Reload(ctx)
}

func (c *ContextRules) Flows() []flowctx.FlowStats { return c.enforcer.Flows() }

func (c *ContextRules) Controller() string { return c.enforcer.Controller() }
