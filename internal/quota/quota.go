// Package quota owns the enforcement of quotas on what tenants store: a
// storage.Backend that charges every change of a tenant's bytes (logical
// and physical), objects, buckets and open multipart uploads to the
// metadata store's usage counters, per tenant and per bucket, and refuses
// with S3's QuotaExceeded, before any byte is stored, a write that would
// take a counter over its limit (the smaller of the quota stored by `facet
// ctl quota set` and the one a policy sets).
//
// It is a reservation scheme: a write reserves its declared length (and an
// object, an upload, a bucket) in one atomic step of the store before its
// body is read, then settles the difference with what was stored (physical
// bytes, known only then) or releases the reservation when it fails. So
// across a fleet sharing one store a limit is never exceeded by
// concurrent writes. What can drift is the count itself: two concurrent
// writes (or deletes) of the same key both see the same previous object,
// and a write that dies between its commit and its settlement (a crash)
// leaves its reservation; Recount repairs both from the backend's
// listings.
package quota

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
)

// Ledger keeps limits and usage counters (the metadata store).
type Ledger interface {
	Charge(ctx context.Context, charges ...meta.Charge) error
	Quota(ctx context.Context, scope meta.Scope) (limits, usage meta.Counters, err error)
	SetUsage(ctx context.Context, scope meta.Scope, usage meta.Counters) error
	DropCounters(ctx context.Context, scope meta.Scope) error
}

// Owners says which tenant owns a bucket (the metadata store's cache); a
// bucket nobody owns (the recycle bin's hidden one) is not accounted.
type Owners interface {
	BucketOwner(ctx context.Context, bucket string) (tenant string, created time.Time, err error)
}

// PolicyLimits returns the limits policies set on a tenant and on one of
// its buckets (0: none); nil means no policy sets quotas.
type PolicyLimits func(tenant, bucket string) (ofTenant, ofBucket meta.Counters)

// Config assembles a Backend.
type Config struct {
	Backend storage.Backend
	Ledger  Ledger
	Owners  Owners
	Policy  PolicyLimits
	// MaxUploads caps a tenant's open multipart uploads where no quota
	// does (0: no cap).
	MaxUploads int64
	// Refused is told of every refusal: the tenant and the quota
	// (bytes, objects, buckets, uploads). May be nil.
	Refused func(tenant, kind string)
	Log     *slog.Logger
}

// Backend is a storage.Backend that enforces quotas and keeps usage.
type Backend struct {
	storage.Backend
	cfg Config
	// down is set while charges fail (the store is unreachable), so that
	// an outage is logged once, not once per write.
	down atomic.Bool
}

// New wraps cfg.Backend.
func New(cfg Config) *Backend {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Backend{Backend: cfg.Backend, cfg: cfg}
}

// owner returns the bucket's tenant, or "" for a bucket nobody owns.
func (b *Backend) owner(ctx context.Context, bucket string) (string, error) {
	t, _, err := b.cfg.Owners.BucketOwner(ctx, bucket)
	if errors.Is(err, s3err.ErrNoSuchBucket) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("quota: owner of %s: %w", bucket, err)
	}
	return t, nil
}

// charges builds the tenant's and the bucket's share of one change.
func (b *Backend) charges(tenant, bucket string, d meta.Counters) []meta.Charge {
	var pt, pb meta.Counters
	if b.cfg.Policy != nil {
		pt, pb = b.cfg.Policy(tenant, bucket)
	}
	cs := []meta.Charge{{Scope: meta.Scope{Tenant: tenant}, Delta: d, Policy: pt, Default: meta.Counters{Uploads: b.cfg.MaxUploads}}}
	if bucket != "" {
		bd := d
		bd.Buckets = 0
		cs = append(cs, meta.Charge{Scope: meta.Scope{Tenant: tenant, Bucket: bucket}, Delta: bd, Policy: pb})
	}
	return cs
}

// reserve charges d before a change, answering QuotaExceeded when a limit
// refuses it.
func (b *Backend) reserve(ctx context.Context, tenant, bucket, key string, d meta.Counters) error {
	err := b.cfg.Ledger.Charge(ctx, b.charges(tenant, bucket, d)...)
	var qe *meta.QuotaError
	if errors.As(err, &qe) {
		if b.cfg.Refused != nil {
			b.cfg.Refused(tenant, qe.Field)
		}
		return &s3err.Error{Code: s3err.QuotaExceeded, Bucket: bucket, Key: key, Err: err,
			Message: fmt.Sprintf("The %s quota of %s (%d) would be exceeded: %d in use, %d requested.", qe.Field, qe.Scope, qe.Limit, qe.Used, qe.Want)}
	}
	if err != nil {
		// The store is unreachable. A gateway fails static through a
		// metadata outage (every other request path does), so a write is
		// let through uncharged, unless a policy (which this node holds
		// in memory) puts a limit on the tenant or bucket: then it waits
		// for the store (503 SlowDown, which clients retry). Limits only
		// the store knows (facet ctl quota set) are not enforced until it
		// is back; quota recount repairs the counts.
		if b.policyLimited(tenant, bucket) {
			return &s3err.Error{Code: s3err.SlowDown, Bucket: bucket, Key: key, Err: err,
				Message: "Please reduce your request rate: the quota of this tenant cannot be checked while the metadata store is unreachable."}
		}
		b.chargeFailed(err)
		return nil
	}
	b.chargeWorked()
	return nil
}

// chargeFailed logs the first failed charge of an outage.
func (b *Backend) chargeFailed(err error) {
	if b.down.CompareAndSwap(false, true) {
		b.cfg.Log.Warn("quota: usage cannot be charged: writes go through uncharged (unless a policy limits them) until the store answers; `facet ctl quota recount` repairs the usage", "err", err)
	}
}

// chargeWorked logs the end of an outage.
func (b *Backend) chargeWorked() {
	if b.down.CompareAndSwap(true, false) {
		b.cfg.Log.Info("quota: usage charged again")
	}
}

// policyLimited reports whether a policy limits the tenant or the bucket.
func (b *Backend) policyLimited(tenant, bucket string) bool {
	if b.cfg.Policy == nil {
		return false
	}
	pt, pb := b.cfg.Policy(tenant, bucket)
	return pt != (meta.Counters{}) || pb != (meta.Counters{})
}

// settle applies d after a change that happened (or undoes a reservation
// of one that did not): no limit refuses it, since what it counts is
// already stored or already gone. Its failure cannot undo the change, so it
// is logged with the amount the counters missed, for a recount to repair.
func (b *Backend) settle(ctx context.Context, tenant, bucket string, d meta.Counters) {
	if d == (meta.Counters{}) {
		return
	}
	cs := b.charges(tenant, bucket, d)
	for i := range cs {
		cs[i].Settle = true
	}
	if err := b.cfg.Ledger.Charge(context.WithoutCancel(ctx), cs...); err != nil {
		b.chargeFailed(err)
		b.cfg.Log.Debug("quota: usage not updated; `facet ctl quota recount` repairs it", "tenant", tenant, "bucket", bucket, "missed", d, "err", err)
		return
	}
	b.chargeWorked()
}
