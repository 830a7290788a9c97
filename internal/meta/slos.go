package meta

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// SLO is a tenant's service-level objective (bandwidth, operations...),
// written by policies such as SET bandwidth WITH get=30MB/s and read by the
// QoS controller. The spec is opaque to the store.
type SLO struct {
	Tenant  string
	Spec    json.RawMessage
	Updated time.Time
}

type sloRecord struct {
	V       int             `json:"v"`
	Tenant  string          `json:"tenant"`
	Spec    json.RawMessage `json:"spec"`
	Updated time.Time       `json:"updated"`
}

func (r *sloRecord) version() int { return r.V }

func (r *sloRecord) slo() SLO {
	return SLO{Tenant: r.Tenant, Spec: slices.Clone(r.Spec), Updated: r.Updated}
}

// PutSLO sets (creates or replaces) a tenant's SLO. The tenant need not
// exist yet, like the policy that sets it.
func (s *Store) PutSLO(ctx context.Context, tenant string, spec json.RawMessage) (SLO, error) {
	if err := checkTenantName(tenant); err != nil {
		return SLO{}, fmt.Errorf("meta: put SLO: %w", err)
	}
	if err := checkBlob("SLO", spec); err != nil {
		return SLO{}, fmt.Errorf("meta: put SLO: %w", err)
	}
	var out SLO
	err := s.kv.update(ctx, func(tx kvTx) error {
		rec := sloRecord{V: recordVersion, Tenant: tenant, Spec: spec, Updated: s.timestamp()}
		if err := putRecord(tx, tblSLOs, tenant, &rec); err != nil {
			return err
		}
		out = rec.slo()
		_, err := bumpVersion(tx)
		return err
	})
	if err != nil {
		return SLO{}, fmt.Errorf("meta: put SLO: %w", err)
	}
	s.log.Info("SLO set", "tenant", tenant)
	return out, nil
}

// GetSLO returns a tenant's SLO, or ErrSLONotFound.
func (s *Store) GetSLO(ctx context.Context, tenant string) (SLO, error) {
	var rec sloRecord
	var ok bool
	err := s.kv.view(ctx, func(tx kvTx) error {
		var err error
		ok, err = getRecord(tx, tblSLOs, tenant, &rec)
		return err
	})
	if err != nil {
		return SLO{}, fmt.Errorf("meta: get SLO: %w", err)
	}
	if !ok {
		return SLO{}, fmt.Errorf("meta: get SLO: %w: %q", ErrSLONotFound, tenant)
	}
	return rec.slo(), nil
}

// ListSLOs lists all SLOs in tenant order.
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
	err := s.kv.update(ctx, func(tx kvTx) error { return deleteRecord(tx, tblSLOs, tenant, ErrSLONotFound) })
	if err != nil {
		return fmt.Errorf("meta: delete SLO: %w", err)
	}
	s.log.Info("SLO deleted", "tenant", tenant)
	return nil
}
