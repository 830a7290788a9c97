package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/ownership"
	"github.com/facet-sds/facet/internal/promexp"
	"github.com/facet-sds/facet/internal/qos"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage/integrity"
)

// bucketOwners names the tenant that owns a bucket (meta.Cache).
type bucketOwners interface {
	BucketOwner(ctx context.Context, bucket string) (string, time.Time, error)
}

// integrityFailures counts and logs checksum mismatches by the tenant that
// owns the damaged object.
type integrityFailures struct {
	owners  bucketOwners
	backend string
	m       *promexp.Integrity
	log     *slog.Logger
}

func (f integrityFailures) IntegrityFailed(ctx context.Context, bucket, key string, err error) {
	tenant, _, oerr := f.owners.BucketOwner(ctx, bucket)
	if oerr != nil {
		tenant = ""
	}
	f.m.Failed(tenant, f.backend)
	f.log.ErrorContext(ctx, "stored object failed its checksum; nothing of the damaged block was served",
		"tenant", tenant, "bucket", bucket, "key", key, "backend", f.backend, "err", err.Error())
}

// backendKind is the backend label of the integrity metrics.
func backendKind(opts Options) string {
	if opts.BackendURL != "" {
		return "s3"
	}
	return "fs"
}

// scrubStore is what a scrub's scope is resolved from (meta.Store).
type scrubStore interface {
	bucketOwners
	GetTenant(ctx context.Context, name string) (meta.Tenant, error)
	ListTenants(ctx context.Context) ([]meta.Tenant, error)
	ListBuckets(ctx context.Context, tenant string) ([]ownership.Bucket, error)
}

// scrubService is the admin API's scrubber: it resolves a scope to the
// buckets it names and runs the scrub for the server's life.
type scrubService struct {
	s     *integrity.Scrubber
	store scrubStore
	life  context.Context
}

func (a scrubService) Start(ctx context.Context, tenant, bucket string) (admin.ScrubReport, error) {
	refs, err := a.scope(ctx, tenant, bucket)
	if err != nil {
		return admin.ScrubReport{}, err
	}
	return a.s.Start(a.life, tenant, bucket, refs)
}

func (a scrubService) Status(context.Context) (admin.ScrubReport, bool) { return a.s.Status() }

// scope lists the buckets a scrub covers: one bucket, a tenant's, or
// every tenant's.
func (a scrubService) scope(ctx context.Context, tenant, bucket string) ([]integrity.BucketRef, error) {
	if bucket != "" {
		owner, _, err := a.store.BucketOwner(ctx, bucket)
		if errors.Is(err, s3err.ErrNoSuchBucket) || (err == nil && tenant != "" && owner != tenant) {
			return nil, fmt.Errorf("%w: bucket %q (of tenant %q)", admin.ErrScrubScope, bucket, tenant)
		}
		if err != nil {
			return nil, err
		}
		return []integrity.BucketRef{{Tenant: owner, Bucket: bucket}}, nil
	}
	var tenants []string
	if tenant != "" {
		if _, err := a.store.GetTenant(ctx, tenant); err != nil {
			if errors.Is(err, meta.ErrTenantNotFound) {
				return nil, fmt.Errorf("%w: tenant %q", admin.ErrScrubScope, tenant)
			}
			return nil, err
		}
		tenants = []string{tenant}
	} else {
		all, err := a.store.ListTenants(ctx)
		if err != nil {
			return nil, err
		}
		for _, t := range all {
			tenants = append(tenants, t.Name)
		}
	}
	var refs []integrity.BucketRef
	for _, t := range tenants {
		bs, err := a.store.ListBuckets(ctx, t)
		if err != nil {
			return nil, err
		}
		for _, b := range bs {
			refs = append(refs, integrity.BucketRef{Tenant: t, Bucket: b.Name})
		}
	}
	return refs, nil
}

// scrubQoS admits the scrubber's reads into the tenant's background
// class, as the recycle bin's copies are.
type scrubQoS struct{ l *qos.Limiter }

func (q scrubQoS) Admit(ctx context.Context, tenant string) (integrity.Work, error) {
	s, err := q.l.Admit(ctx, tenant, qos.ClassBackground)
	if err != nil {
		return nil, err
	}
	return s, nil
}
