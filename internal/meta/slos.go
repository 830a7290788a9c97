package meta

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// SLO is a tenant's service-level objective (bandwidth, operations...),
// set through the admin API and read by the QoS controller, or the SLO of
// one of the tenant's request classes (Class set: the API's counterpart of
// a policy naming a CONTEXT). The spec is opaque to the store.
type SLO struct {
	Tenant  string
	Class   string
	Spec    json.RawMessage
	Updated time.Time
}

type sloRecord struct {
	V       int             `json:"v"`
	Tenant  string          `json:"tenant"`
	Class   string          `json:"class,omitempty"`
	Spec    json.RawMessage `json:"spec"`
	Updated time.Time       `json:"updated"`
}

func (r *sloRecord) version() int { return r.V }

func (r *sloRecord) slo() SLO {
	return SLO{Tenant: r.Tenant, Class: r.Class, Spec: slices.Clone(r.Spec), Updated: r.Updated}
}

// sloKey is the record's key: the tenant for its own SLO, tenant and
// class (indexKey) for a class's, so both live in one table and a tenant
// name can never reach a class record.
func sloKey(tenant, class string) string {
	if class == "" {
		return tenant
	}
	return indexKey(tenant, class)
}

// checkClassName checks a request class name: the rule of
// internal/flowctx (1-63 characters [a-z0-9][a-z0-9_.-]*), which is the
// names' rule here.
func checkClassName(class string) error {
	if !validName(class) {
		return fmt.Errorf("%w %q: want 1-63 characters [a-z0-9][a-z0-9_.-]*", ErrInvalidClassName, class)
	}
	return nil
}

// PutSLO sets (creates or replaces) a tenant's SLO. The tenant need not
// exist yet, like the policy that sets it.
func (s *Store) PutSLO(ctx context.Context, tenant string, spec json.RawMessage) (SLO, error) {
	return s.putSLO(ctx, tenant, "", spec)
}

// PutClassSLO sets (creates or replaces) the SLO of tenant's request
// class.
func (s *Store) PutClassSLO(ctx context.Context, tenant, class string, spec json.RawMessage) (SLO, error) {
	if err := checkClassName(class); err != nil {
		return SLO{}, fmt.Errorf("meta: put SLO: %w", err)
	}
	return s.putSLO(ctx, tenant, class, spec)
}

func (s *Store) putSLO(ctx context.Context, tenant, class string, spec json.RawMessage) (SLO, error) {
	if err := checkTenantName(tenant); err != nil {
		return SLO{}, fmt.Errorf("meta: put SLO: %w", err)
	}
	if err := checkBlob("SLO", spec); err != nil {
		return SLO{}, fmt.Errorf("meta: put SLO: %w", err)
	}
	var out SLO
	err := s.kv.update(ctx, func(tx kvTx) error {
		rec := sloRecord{V: recordVersion, Tenant: tenant, Class: class, Spec: spec, Updated: s.timestamp()}
		if err := putRecord(tx, tblSLOs, sloKey(tenant, class), &rec); err != nil {
			return err
		}
		out = rec.slo()
		_, err := bumpVersion(tx)
		return err
	})
	if err != nil {
		return SLO{}, fmt.Errorf("meta: put SLO: %w", err)
	}
	s.log.Info("SLO set", "tenant", tenant, "class", class)
	return out, nil
}

// GetSLO returns a tenant's SLO, or ErrSLONotFound.
func (s *Store) GetSLO(ctx context.Context, tenant string) (SLO, error) {
	return s.getSLO(ctx, tenant, "")
}

// GetClassSLO returns the SLO of tenant's request class, or
// ErrSLONotFound.
func (s *Store) GetClassSLO(ctx context.Context, tenant, class string) (SLO, error) {
	return s.getSLO(ctx, tenant, class)
}

func (s *Store) getSLO(ctx context.Context, tenant, class string) (SLO, error) {
	if !validName(tenant) || class != "" && !validName(class) {
		// Not a key this table can hold (a tenant name with the index
		// separator would reach a class record).
		return SLO{}, fmt.Errorf("meta: get SLO: %w: %q %q", ErrSLONotFound, tenant, class)
	}
	var rec sloRecord
	var ok bool
	err := s.kv.view(ctx, func(tx kvTx) error {
		var err error
		ok, err = getRecord(tx, tblSLOs, sloKey(tenant, class), &rec)
		return err
	})
	if err != nil {
		return SLO{}, fmt.Errorf("meta: get SLO: %w", err)
	}
	if !ok {
		return SLO{}, fmt.Errorf("meta: get SLO: %w: %q %q", ErrSLONotFound, tenant, class)
	}
	return rec.slo(), nil
}

// ListSLOs lists all SLOs, the tenants' and their classes', in key order
// (a tenant's own first, then its classes').
func (s *Store) ListSLOs(ctx context.Context) ([]SLO, error) {
	var out []SLO
	err := s.kv.view(ctx, func(tx kvTx) error {
		var err error
		out, err = listSLOs(tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("meta: list SLOs: %w", err)
	}
	return out, nil
}

func listSLOs(tx kvTx) ([]SLO, error) {
	out := []SLO{}
	err := scanRecords(tx, tblSLOs, "", func(rec *sloRecord) error {
		out = append(out, rec.slo())
		return nil
	})
	return out, err
}

// DeleteSLO removes a tenant's SLO, or fails with ErrSLONotFound.
func (s *Store) DeleteSLO(ctx context.Context, tenant string) error {
	return s.deleteSLO(ctx, tenant, "")
}

// DeleteClassSLO removes the SLO of tenant's request class, or fails with
// ErrSLONotFound.
func (s *Store) DeleteClassSLO(ctx context.Context, tenant, class string) error {
	return s.deleteSLO(ctx, tenant, class)
}

func (s *Store) deleteSLO(ctx context.Context, tenant, class string) error {
	if !validName(tenant) || class != "" && !validName(class) {
		return fmt.Errorf("meta: delete SLO: %w: %q %q", ErrSLONotFound, tenant, class)
	}
	err := s.kv.update(ctx, func(tx kvTx) error { return deleteRecord(tx, tblSLOs, sloKey(tenant, class), ErrSLONotFound) })
	if err != nil {
		return fmt.Errorf("meta: delete SLO: %w", err)
	}
	s.log.Info("SLO deleted", "tenant", tenant, "class", class)
	return nil
}
