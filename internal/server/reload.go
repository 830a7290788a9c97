package server

import (
	"context"
	"log/slog"

	"github.com/facet-sds/facet/internal/meta"
)

// reloadingStore is the metadata store as the admin API sees it: every
// successful change that the policy table depends on (policies, groups,
// data keys, tenants) rebuilds the table before the call returns, so the
// next request on this node sees it; then the fleet is told on the bus
// (the other nodes' poll of the change version is the safety net). Key
// revocations and tenant deletions are dropped from every node's
// credential cache the same way.
type reloadingStore struct {
	*meta.Store
	reload func(ctx context.Context) error
	fleet  *fleetSync
	log    *slog.Logger
}

func (s reloadingStore) after(ctx context.Context, err error) error {
	if err == nil {
		if rerr := s.reload(ctx); rerr != nil {
			s.log.Warn("policy table reload after a change failed; the poll will retry", "err", rerr)
		}
		s.fleet.announceVersion(ctx)
	}
	return err
}

func (s reloadingStore) RevokeKey(ctx context.Context, tenant, accessKey string) error {
	err := s.Store.RevokeKey(ctx, tenant, accessKey)
	if err == nil {
		s.fleet.invalidate(InvalidateMsg{Keys: []string{accessKey}})
	}
	return err
}

func (s reloadingStore) CreateTenantWithKey(ctx context.Context, name string) (meta.Tenant, meta.NewKey, error) {
	t, k, err := s.Store.CreateTenantWithKey(ctx, name)
	return t, k, s.after(ctx, err)
}

func (s reloadingStore) DeleteTenant(ctx context.Context, name string) error {
	err := s.Store.DeleteTenant(ctx, name)
	if err == nil {
		s.fleet.invalidate(InvalidateMsg{Tenants: []string{name}})
	}
	return s.after(ctx, err)
}

func (s reloadingStore) RotateDataKey(ctx context.Context, tenant string) (meta.DataKeys, error) {
	k, err := s.Store.RotateDataKey(ctx, tenant)
	return k, s.after(ctx, err)
}

func (s reloadingStore) CreateGroup(ctx context.Context, name string, members []string) (meta.Group, error) {
	g, err := s.Store.CreateGroup(ctx, name, members)
	return g, s.after(ctx, err)
}

func (s reloadingStore) DeleteGroup(ctx context.Context, name string) error {
	return s.after(ctx, s.Store.DeleteGroup(ctx, name))
}

func (s reloadingStore) AddGroupMembers(ctx context.Context, name string, members ...string) (meta.Group, error) {
	g, err := s.Store.AddGroupMembers(ctx, name, members...)
	return g, s.after(ctx, err)
}

func (s reloadingStore) RemoveGroupMembers(ctx context.Context, name string, members ...string) (meta.Group, error) {
	g, err := s.Store.RemoveGroupMembers(ctx, name, members...)
	return g, s.after(ctx, err)
}

func (s reloadingStore) DeletePolicy(ctx context.Context, id string) error {
	return s.after(ctx, s.Store.DeletePolicy(ctx, id))
}
