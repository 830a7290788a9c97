package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/facet-sds/facet/internal/promexp"
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
