package meta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Leases elect one active instance of a role among processes that share
// the store (one active automation controller in a fleet). A lease is a
// holder id and an expiry in one record; the holder renews it well before
// it expires, and anyone may take it once it has. Expiry is judged by the
// clock of the process asking, so the holder must renew with a margin
// larger than the clock skew between machines.
//
// Every new acquisition (of a free, expired or released lease, or by
// another holder) raises the lease's term by one; a renewal keeps it.
// What a holder publishes carries the term, so that a reader can refuse
// a deposed holder's late words once it has heard a newer one. A release
// keeps the record, expired, so that the term never goes back.

// leaseRecord is the stored lease.
type leaseRecord struct {
	Holder    string `json:"holder"`
	ExpiresMs int64  `json:"expires_ms"`
	// Term is 0 in records written before terms: the next acquisition
	// makes it 1.
	Term uint64 `json:"term,omitempty"`
}

// AcquireLease takes or renews the lease name for holder for ttl. It
// reports whether holder has the lease now: true when the lease was free,
// expired or already holder's; false while another holder's is current.
func (s *Store) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	term, err := s.AcquireLeaseTerm(ctx, name, holder, ttl)
	return term != 0, err
}

// AcquireLeaseTerm is AcquireLease returning the lease's term while
// holder has it (1 or more), 0 while another holder's is current.
func (s *Store) AcquireLeaseTerm(ctx context.Context, name, holder string, ttl time.Duration) (uint64, error) {
	if name == "" || holder == "" || ttl <= 0 {
		return 0, errors.New("meta: acquire lease: name, holder and a positive ttl are required")
	}
	var term uint64
	err := s.kv.update(ctx, func(tx kvTx) error {
		term = 0
		now := s.now()
		cur, err := getLease(tx, name)
		if err != nil {
			return err
		}
		current := cur != nil && now.UnixMilli() < cur.ExpiresMs
		if current && cur.Holder != holder {
			return nil
		}
		next := uint64(1)
		switch {
		case current: // a renewal
			next = max(cur.Term, 1)
		case cur != nil:
			next = cur.Term + 1
		}
		raw, err := json.Marshal(leaseRecord{Holder: holder, ExpiresMs: now.Add(ttl).UnixMilli(), Term: next})
		if err != nil {
			return err
		}
		term = next
		return tx.put(tblLeases, name, raw)
	})
	if err != nil {
		return 0, fmt.Errorf("meta: acquire lease %s: %w", name, err)
	}
	return term, nil
}

// ReleaseLease gives the lease up if holder has it, so that a standby
// takes over at once instead of after the expiry.
func (s *Store) ReleaseLease(ctx context.Context, name, holder string) error {
	err := s.kv.update(ctx, func(tx kvTx) error {
		cur, err := getLease(tx, name)
		if err != nil || cur == nil || cur.Holder != holder {
			return err
		}
		// Expired, not deleted: the next holder's term follows this one.
		cur.ExpiresMs = 0
		raw, err := json.Marshal(cur)
		if err != nil {
			return err
		}
		return tx.put(tblLeases, name, raw)
	})
	if err != nil {
		return fmt.Errorf("meta: release lease %s: %w", name, err)
	}
	return nil
}

// LeaseHolder returns the current holder of the lease name, or "" when it
// is free or expired.
func (s *Store) LeaseHolder(ctx context.Context, name string) (string, error) {
	var holder string
	err := s.kv.view(ctx, func(tx kvTx) error {
		cur, err := getLease(tx, name)
		if err == nil && cur != nil && s.now().UnixMilli() < cur.ExpiresMs {
			holder = cur.Holder
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("meta: lease %s: %w", name, err)
	}
	return holder, nil
}

func getLease(tx kvTx, name string) (*leaseRecord, error) {
	raw, err := tx.get(tblLeases, name)
	if err != nil || raw == nil {
		return nil, err
	}
	var rec leaseRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("decode lease %s: %w", name, err)
	}
	return &rec, nil
}
