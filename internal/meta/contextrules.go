package meta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// A tenant's context rules map its requests to classes (internal/flowctx
// owns their meaning and validates them); the store keeps them as a JSON
// document per tenant so that every gateway of a fleet classifies alike.

// ErrContextRulesNotFound is returned for a tenant without rules.
var ErrContextRulesNotFound = errors.New("no context rules")

type contextRulesRecord struct {
	V       int             `json:"v"`
	Tenant  string          `json:"tenant"`
	Rules   json.RawMessage `json:"rules"`
	Updated time.Time       `json:"updated"`
}

func (r *contextRulesRecord) version() int { return r.V }

// SetContextRules stores tenant's rules (a JSON document the caller has
// validated), replacing any.
func (s *Store) SetContextRules(ctx context.Context, tenant string, rules json.RawMessage) error {
	if err := checkBlob("context rules", rules); err != nil {
		return fmt.Errorf("meta: set context rules: %w", err)
	}
	err := s.kv.update(ctx, func(tx kvTx) error {
		if _, err := requireTenant(tx, tenant); err != nil {
			return err
		}
		rec := contextRulesRecord{V: recordVersion, Tenant: tenant, Rules: rules, Updated: s.timestamp()}
		if err := putRecord(tx, tblContextRules, tenant, &rec); err != nil {
			return err
		}
		_, err := bumpVersion(tx)
		return err
	})
	if err != nil {
		return fmt.Errorf("meta: set context rules: %w", err)
	}
	return nil
}

// ContextRules returns tenant's rules, or ErrContextRulesNotFound.
func (s *Store) ContextRules(ctx context.Context, tenant string) (json.RawMessage, error) {
	var rec contextRulesRecord
	err := s.kv.view(ctx, func(tx kvTx) error {
		ok, err := getRecord(tx, tblContextRules, tenant, &rec)
		if err == nil && !ok {
			err = fmt.Errorf("%w for tenant %q", ErrContextRulesNotFound, tenant)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("meta: context rules: %w", err)
	}
	return rec.Rules, nil
}

// DeleteContextRules removes tenant's rules.
func (s *Store) DeleteContextRules(ctx context.Context, tenant string) error {
	err := s.kv.update(ctx, func(tx kvTx) error {
		return deleteRecord(tx, tblContextRules, tenant, ErrContextRulesNotFound)
	})
	if err != nil {
		return fmt.Errorf("meta: delete context rules: %w", err)
	}
	return nil
}

// AllContextRules returns every tenant's rules.
func (s *Store) AllContextRules(ctx context.Context) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	err := s.kv.view(ctx, func(tx kvTx) error {
		clear(out)
		return scanRecords(tx, tblContextRules, "", func(r *contextRulesRecord) error {
			out[r.Tenant] = r.Rules
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("meta: context rules: %w", err)
	}
	return out, nil
}
