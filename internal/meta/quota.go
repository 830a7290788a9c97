package meta

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Quotas and usage. Each scope (a tenant, or one bucket of a tenant) has one
// record holding both its limits (set by `facet ctl quota set`) and its
// usage counters, so that a charge checks and moves them in one atomic step:
// one bbolt transaction on the embedded store, one Lua script on Redis
// (redisquota.go), whichever gateway of a fleet asks. A charge never takes a
// counter over its limit; that is what makes the limit exact across a fleet.

// Counters are the quantities a quota limits and usage counts. In a limit,
// 0 means none.
type Counters struct {
	// Bytes are logical bytes: what clients wrote, objects and open
	// uploads' parts alike.
	Bytes int64 `json:"bytes"`
	// Physical bytes are what the backend holds after filters
	// (compression shrinks them). Counted, never limited: they are known
	// only once a write has been stored.
	Physical int64 `json:"physical"`
	Objects  int64 `json:"objects"`
	// Buckets is counted and limited on the tenant's scope only.
	Buckets int64 `json:"buckets"`
	// Uploads are open multipart uploads.
	Uploads int64 `json:"uploads"`
}

// counterFields names Counters' fields as the store records them, in the
// order of (*Counters).fields.
var counterFields = [...]string{"bytes", "physical", "objects", "buckets", "uploads"}

func (c *Counters) fields() [5]*int64 {
	return [5]*int64{&c.Bytes, &c.Physical, &c.Objects, &c.Buckets, &c.Uploads}
}

// Scope is a tenant (Bucket "") or one of its buckets.
type Scope struct{ Tenant, Bucket string }

func (s Scope) key() string {
	if s.Bucket == "" {
		return s.Tenant
	}
	return indexKey(s.Tenant, s.Bucket)
}

// String is how messages name the scope.
func (s Scope) String() string {
	if s.Bucket == "" {
		return "tenant " + s.Tenant
	}
	return "bucket " + s.Bucket
}

// Charge is one scope's part of a usage change.
type Charge struct {
	Scope Scope
	// Delta is added to the scope's usage. A positive field is refused when
	// it would take the field over its limit; zero and negative ones always
	// apply.
	Delta Counters
	// Policy holds limits set by policies (0: none). Where both the policy
	// and the stored quota limit a field, the smaller wins.
	Policy Counters
	// Default limits a field that neither a stored quota nor a policy
	// limits (the default cap on open uploads).
	Default Counters
	// Settle applies Delta whatever the limits: it counts a change that
	// has already happened (the bytes of a write once stored, a delete),
	// which no limit can refuse any more.
	Settle bool
}

// QuotaError is a refused charge: it names the scope, the quota and its
// limit.
type QuotaError struct {
	Scope Scope
	// Field is the quota: bytes, objects, buckets or uploads.
	Field string
	Limit int64
	// Used is the usage before the charge, Want what the charge added.
	Used, Want int64
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("%s quota of %s exceeded: limit %d, in use %d, requested %d", e.Field, e.Scope, e.Limit, e.Used, e.Want)
}

// ErrQuotaExceeded matches every *QuotaError with errors.Is.
var ErrQuotaExceeded = errors.New("quota exceeded")

// Is makes errors.Is(err, ErrQuotaExceeded) hold.
func (e *QuotaError) Is(target error) bool { return target == ErrQuotaExceeded }

// effectiveLimit is the limit a charge meets: the smaller of the stored and
// the policy limit where both are set, else whichever is, else the default.
func effectiveLimit(stored, policy, def int64) int64 {
	lim := stored
	if policy > 0 && (lim == 0 || policy < lim) {
		lim = policy
	}
	if lim == 0 {
		lim = def
	}
	return lim
}

// usageRecord is a scope's limits and usage in the embedded store.
type usageRecord struct {
	V      int      `json:"v"`
	Usage  Counters `json:"usage"`
	Limits Counters `json:"limits"`
}

func (r *usageRecord) version() int { return r.V }

// counterKV is what a backend offers when it can charge counters better
// than a generic transaction (Redis: one script instead of an optimistic
// transaction that every concurrent writer of the table would conflict
// with).
type counterKV interface {
	charge(ctx context.Context, charges []Charge) error
	counters(ctx context.Context, scope Scope) (usage, limits Counters, err error)
	// setCounters replaces usage and/or limits (nil: leave as is).
	setCounters(ctx context.Context, scope Scope, usage, limits *Counters) error
	dropCounters(ctx context.Context, scope Scope) error
}

// Charge applies every charge, or none of them when one would exceed a
// limit: it then returns that *QuotaError.
func (s *Store) Charge(ctx context.Context, charges ...Charge) error {
	if ck, ok := s.kv.(counterKV); ok {
		return ck.charge(ctx, charges)
	}
	r := &chargeReq{charges: charges, wake: make(chan struct{}, 1)}
	if s.charges.join(r) {
		s.leadCharges(ctx, r)
	}
	if r.err != nil {
		return fmt.Errorf("meta: charge usage: %w", r.err)
	}
	if r.refused != nil {
		return r.refused
	}
	return nil
}

// Group commit. A bbolt commit is an fsync, milliseconds on a disk, and
// every write of every tenant charges its counters: one commit per charge
// would make the metadata store's disk the ceiling on writes. So charges
// that arrive while a commit runs wait for it, then the first of them
// commits all of them in one transaction, each checked in its turn as if
// alone (its own refusal refuses it only). A lone charge commits at once:
// nothing waits for a timer.

// chargeQueue holds the charges waiting for the commit in progress.
type chargeQueue struct {
	mu      sync.Mutex
	pending []*chargeReq
	busy    bool // a leader is committing
}

// chargeReq is one caller's charge and its outcome.
type chargeReq struct {
	charges []Charge
	refused *QuotaError
	err     error
	// wake is signalled once: the charge was committed (lead false), or
	// its caller now leads the next commit (lead true).
	wake chan struct{}
	lead bool
}

// join queues r; it reports whether r's caller leads a commit. A follower
// waits until its charge is committed or it is made the next leader.
func (q *chargeQueue) join(r *chargeReq) bool {
	q.mu.Lock()
	q.pending = append(q.pending, r)
	if !q.busy {
		q.busy = true
		q.mu.Unlock()
		return true
	}
	q.mu.Unlock()
	<-r.wake
	return r.lead
}

// leadCharges commits every pending charge (r's among them) in one
// transaction, hands the lead to the first charge that arrived meanwhile,
// and wakes the others.
func (s *Store) leadCharges(ctx context.Context, r *chargeReq) {
	q := &s.charges
	q.mu.Lock()
	batch := q.pending
	q.pending = nil
	q.mu.Unlock()
	// The batch is other callers' too: the leader's cancellation must not
	// fail them.
	err := s.kv.update(context.WithoutCancel(ctx), func(tx kvTx) error {
		recs := map[string]*usageRecord{}
		for _, b := range batch {
			var err error
			if b.refused, err = applyCharges(tx, recs, b.charges); err != nil {
				return err
			}
		}
		for k, rec := range recs {
			rec.V = recordVersion
			if err := putRecord(tx, tblUsage, k, rec); err != nil {
				return err
			}
		}
		return nil
	})
	for _, b := range batch {
		if b.err = err; err != nil {
			b.refused = nil
		}
	}
	q.mu.Lock()
	if len(q.pending) > 0 {
		next := q.pending[0]
		next.lead = true
		next.wake <- struct{}{}
	} else {
		q.busy = false
	}
	q.mu.Unlock()
	for _, b := range batch {
		if b != r {
			b.wake <- struct{}{}
		}
	}
}

// applyCharges checks one caller's charges against the records as the
// batch has left them (recs caches what the transaction read and
// changed), and applies them all unless one is refused.
func applyCharges(tx kvTx, recs map[string]*usageRecord, charges []Charge) (*QuotaError, error) {
	got := make([]*usageRecord, len(charges))
	for i, c := range charges {
		k := c.Scope.key()
		rec, ok := recs[k]
		if !ok {
			rec = &usageRecord{}
			if _, err := getRecord(tx, tblUsage, k, rec); err != nil {
				return nil, err
			}
			recs[k] = rec
		}
		if refused := checkCharge(c, rec.Usage, rec.Limits); refused != nil {
			return refused, nil
		}
		got[i] = rec
	}
	for i, c := range charges {
		u, d := got[i].Usage.fields(), c.Delta.fields()
		for j := range u {
			*u[j] += *d[j]
		}
	}
	return nil, nil
}

// checkCharge returns the first field c's positive delta would take over
// its effective limit, or nil.
func checkCharge(c Charge, usage, limits Counters) *QuotaError {
	if c.Settle {
		return nil
	}
	u, l, d, p, def := usage.fields(), limits.fields(), c.Delta.fields(), c.Policy.fields(), c.Default.fields()
	for j := range u {
		if *d[j] <= 0 {
			continue
		}
		lim := effectiveLimit(*l[j], *p[j], *def[j])
		if lim > 0 && *u[j]+*d[j] > lim {
			return &QuotaError{Scope: c.Scope, Field: counterFields[j], Limit: lim, Used: *u[j], Want: *d[j]}
		}
	}
	return nil
}

// Quota returns a scope's stored limits and its usage.
func (s *Store) Quota(ctx context.Context, scope Scope) (limits, usage Counters, err error) {
	if ck, ok := s.kv.(counterKV); ok {
		usage, limits, err = ck.counters(ctx, scope)
	} else {
		err = s.kv.view(ctx, func(tx kvTx) error {
			var rec usageRecord
			if _, err := getRecord(tx, tblUsage, scope.key(), &rec); err != nil {
				return err
			}
			usage, limits = rec.Usage, rec.Limits
			return nil
		})
	}
	if err != nil {
		return Counters{}, Counters{}, fmt.Errorf("meta: quota of %s: %w", scope, err)
	}
	return limits, usage, nil
}

// SetQuota replaces a scope's limits (all zero: no quota), keeping its
// usage.
func (s *Store) SetQuota(ctx context.Context, scope Scope, limits Counters) error {
	if limits.Physical != 0 {
		return fmt.Errorf("meta: set quota: physical bytes are counted, not limited")
	}
	return s.setCounters(ctx, scope, nil, &limits)
}

// SetUsage replaces a scope's usage counters with a recount.
func (s *Store) SetUsage(ctx context.Context, scope Scope, usage Counters) error {
	return s.setCounters(ctx, scope, &usage, nil)
}

func (s *Store) setCounters(ctx context.Context, scope Scope, usage, limits *Counters) error {
	var err error
	if ck, ok := s.kv.(counterKV); ok {
		err = ck.setCounters(ctx, scope, usage, limits)
	} else {
		err = s.kv.update(ctx, func(tx kvTx) error {
			var rec usageRecord
			if _, err := getRecord(tx, tblUsage, scope.key(), &rec); err != nil {
				return err
			}
			if usage != nil {
				rec.Usage = *usage
			}
			if limits != nil {
				rec.Limits = *limits
			}
			rec.V = recordVersion
			return putRecord(tx, tblUsage, scope.key(), &rec)
		})
	}
	if err != nil {
		return fmt.Errorf("meta: set counters of %s: %w", scope, err)
	}
	return nil
}

// DropCounters forgets a scope's limits and usage (its bucket or tenant is
// gone).
func (s *Store) DropCounters(ctx context.Context, scope Scope) error {
	var err error
	if ck, ok := s.kv.(counterKV); ok {
		err = ck.dropCounters(ctx, scope)
	} else {
		err = s.kv.update(ctx, func(tx kvTx) error { return tx.del(tblUsage, scope.key()) })
	}
	if err != nil {
		return fmt.Errorf("meta: drop counters of %s: %w", scope, err)
	}
	return nil
}
