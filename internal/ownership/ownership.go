// Package ownership owns the records of what a tenant owns that the
// metadata store hands to its consumers (the S3 front end, the admin API,
// the control plane): today a tenant's bucket. The errors of ownership
// (no such bucket, owned by another tenant) are in internal/s3err. It is a
// leaf (standard library only) so the store and its consumers share the
// type without importing each other.
package ownership

import "time"

// Bucket is one bucket of a tenant.
type Bucket struct {
	Name    string
	Created time.Time
}
