package metrics

import (
	"fmt"
	"strings"

	"github.com/facet-sds/facet/internal/bus"
)

// TargetKind is a target's granularity.
type TargetKind string

const (
	KindTenant TargetKind = "tenant"
	KindBucket TargetKind = "bucket"
	KindObject TargetKind = "object"
)

// Target is what a metric value is about: a tenant, one of its buckets,
// one object, or a block volume. Its string form is "tenant:t1",
// "bucket:t1/b1", "object:t1/b1/some/key" or "volume:v1".
type Target struct {
	Kind                TargetKind
	Tenant, Bucket, Key string
	Volume              string
}

// TenantTarget, BucketTarget and ObjectTarget build targets.
func TenantTarget(tenant string) Target { return Target{Kind: KindTenant, Tenant: tenant} }
func BucketTarget(tenant, bucket string) Target {
	return Target{Kind: KindBucket, Tenant: tenant, Bucket: bucket}
}
func ObjectTarget(tenant, bucket, key string) Target {
	return Target{Kind: KindObject, Tenant: tenant, Bucket: bucket, Key: key}
}

// String implements fmt.Stringer: the target's canonical name.
func (t Target) String() string { return string(t.Kind) + ":" + t.path() }

func (t Target) path() string {
	switch t.Kind {
	case KindBucket:
		return t.Tenant + "/" + t.Bucket
	case KindObject:
		return t.Tenant + "/" + t.Bucket + "/" + t.Key
	case KindVolume:
		return t.Volume
	}
	return t.Tenant
}

// subjectTokens is the target as two subject tokens: its kind, and its
// path escaped ("bucket.t1/b1").
func (t Target) subjectTokens() string { return string(t.Kind) + "." + bus.EscapeToken(t.path()) }

// ParseTarget parses a target's string form. Tenant and bucket names hold
// no '/'; an object key may.
func ParseTarget(s string) (Target, error) {
	kind, rest, ok := strings.Cut(s, ":")
	if !ok || rest == "" {
		return Target{}, fmt.Errorf("target %q: want tenant:T, bucket:T/B, object:T/B/KEY or volume:V", s)
	}
	var t Target
	switch TargetKind(kind) {
	case KindTenant:
		if strings.Contains(rest, "/") {
			return Target{}, fmt.Errorf("target %q: a tenant name has no '/' (bucket:T/B?)", s)
		}
		t = TenantTarget(rest)
	case KindBucket:
		tn, b, ok := strings.Cut(rest, "/")
		if !ok || tn == "" || b == "" || strings.Contains(b, "/") {
			return Target{}, fmt.Errorf("target %q: want bucket:TENANT/BUCKET", s)
		}
		t = BucketTarget(tn, b)
	case KindObject:
		tn, r, _ := strings.Cut(rest, "/")
		b, k, ok := strings.Cut(r, "/")
		if !ok || tn == "" || b == "" || k == "" {
			return Target{}, fmt.Errorf("target %q: want object:TENANT/BUCKET/KEY", s)
		}
		t = ObjectTarget(tn, b, k)
	case KindVolume:
		if strings.Contains(rest, "/") {
			return Target{}, fmt.Errorf("target %q: a volume name has no '/'", s)
		}
		t = VolumeTarget(rest)
	default:
		return Target{}, fmt.Errorf("target %q: unknown kind %q (tenant, bucket, object or volume)", s, kind)
	}
	return t, nil
}
