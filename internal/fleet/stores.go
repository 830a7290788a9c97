package fleet

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/facet-sds/facet/internal/meta"
)

// PolicyStore is the metadata store as the policy service sees it:
// policies added through the control API and controllers' decisions are
// announced to the fleet once stored.
type PolicyStore struct {
	*meta.Store
	Announcer *Announcer
}

func (s PolicyStore) AddPolicies(ctx context.Context, ps []meta.NewPolicy) ([]meta.Policy, error) {
	out, err := s.Store.AddPolicies(ctx, ps)
	if err == nil {
		s.Announcer.AnnounceVersion(ctx)
	}
	return out, err
}

func (s PolicyStore) SetPolicyState(ctx context.Context, id string, state meta.PolicyState, reason string) (meta.Policy, error) {
	out, err := s.Store.SetPolicyState(ctx, id, state, reason)
	if err == nil {
		s.Announcer.AnnounceVersion(ctx)
	}
	return out, err
}

// FilterStore tells the fleet about run-time filter changes, as
// PolicyStore does for policies, so other gateways load a new module
// without waiting for their poll.
type FilterStore struct {
	*meta.Store
	Announcer *Announcer
}

func (s FilterStore) after(ctx context.Context, err error) error {
	if err == nil {
		s.Announcer.AnnounceVersion(ctx)
	}
	return err
}

func (s FilterStore) PutFilterCode(ctx context.Context, name string, spec json.RawMessage, blobs map[string][]byte, drop []string) (meta.FilterEntry, error) {
	e, err := s.Store.PutFilterCode(ctx, name, spec, blobs, drop)
	return e, s.after(ctx, err)
}

func (s FilterStore) DeleteFilterCode(ctx context.Context, name string, drop []string) error {
	return s.after(ctx, s.Store.DeleteFilterCode(ctx, name, drop))
}

func (s FilterStore) PutDependency(ctx context.Context, d meta.Dependency, data []byte, ch meta.DependencyChange) (meta.Dependency, error) {
	out, err := s.Store.PutDependency(ctx, d, data, ch)
	return out, s.after(ctx, err)
}

func (s FilterStore) DeleteDependency(ctx context.Context, name string, drop []string) error {
	return s.after(ctx, s.Store.DeleteDependency(ctx, name, drop))
}

// AdminStore is the metadata store as the admin API sees it: every
// successful change that the policy table depends on (policies, groups,
// data keys, tenants) rebuilds the table before the call returns, so the
// next request on this node sees it; then the fleet is told on the bus
// (the other nodes' poll of the change version is the safety net). Key
// revocations and tenant deletions are dropped from every node's
// credential cache the same way.
type AdminStore struct {
	*meta.Store
	Reload func(ctx context.Context) error
	Sync   *Sync
	Log    *slog.Logger
}

func (s AdminStore) after(ctx context.Context, err error) error {
	if err == nil {
		if rerr := s.Reload(ctx); rerr != nil {
			s.Log.Warn("policy table reload after a change failed; the poll will retry", "err", rerr)
		}
		s.Sync.a.AnnounceVersion(ctx)
	}
	return err
}

func (s AdminStore) RevokeKey(ctx context.Context, tenant, accessKey string) error {
	err := s.Store.RevokeKey(ctx, tenant, accessKey)
	if err == nil {
		s.Sync.Invalidate(meta.Invalidation{Keys: []string{accessKey}})
	}
	return err
}

func (s AdminStore) CreateTenantWithKey(ctx context.Context, name string) (meta.Tenant, meta.NewKey, error) {
	t, k, err := s.Store.CreateTenantWithKey(ctx, name)
	return t, k, s.after(ctx, err)
}

func (s AdminStore) DeleteTenant(ctx context.Context, name string) error {
	err := s.Store.DeleteTenant(ctx, name)
	if err == nil {
		s.Sync.Invalidate(meta.Invalidation{Tenants: []string{name}})
	}
	return s.after(ctx, err)
}

func (s AdminStore) RotateDataKey(ctx context.Context, tenant string) (meta.DataKeys, error) {
	k, err := s.Store.RotateDataKey(ctx, tenant)
	return k, s.after(ctx, err)
}

func (s AdminStore) CreateGroup(ctx context.Context, name string, members []string) (meta.Group, error) {
	g, err := s.Store.CreateGroup(ctx, name, members)
	return g, s.after(ctx, err)
}

func (s AdminStore) DeleteGroup(ctx context.Context, name string) error {
	return s.after(ctx, s.Store.DeleteGroup(ctx, name))
}

func (s AdminStore) AddGroupMembers(ctx context.Context, name string, members ...string) (meta.Group, error) {
	g, err := s.Store.AddGroupMembers(ctx, name, members...)
	return g, s.after(ctx, err)
}

func (s AdminStore) RemoveGroupMembers(ctx context.Context, name string, members ...string) (meta.Group, error) {
	g, err := s.Store.RemoveGroupMembers(ctx, name, members...)
	return g, s.after(ctx, err)
}

func (s AdminStore) DeletePolicy(ctx context.Context, id string) error {
	return s.after(ctx, s.Store.DeletePolicy(ctx, id))
}
