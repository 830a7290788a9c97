package s3

import (
	"context"
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// sidecarObjKey is the user metadata of a sidecar naming its object.
const sidecarObjKey = "facet-object"

// sidecarGrace is how old a sidecar must be before the sweep considers it:
// far longer than a write takes from its sidecar to its object.
const sidecarGrace = time.Hour

func sidecarTag(full string) map[string]string {
	return map[string]string{sidecarObjKey: base64.RawURLEncoding.EncodeToString([]byte(full))}
}

// sweepLoop sweeps soon after start (at a random moment, so that a fleet's
// gateways do not all list at once) and then every hour, until Close.
func (b *Backend) sweepLoop() {
	wait := time.Minute + rand.N(4*time.Minute)
	for {
		select {
		case <-b.stop:
			return
		case <-time.After(wait):
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-b.stop:
			case <-ctx.Done():
			}
			cancel()
		}()
		_, _ = b.sweepSidecars(ctx, sidecarGrace) // best effort: next hour retries
		cancel()
		wait = time.Hour
	}
}

// sweepSidecars deletes the metadata sidecars older than grace whose object
// is gone or points at another sidecar, and returns how many it deleted.
// Sidecars without an object tag (written by an older Facet) are kept.
// Several gateways sweeping at once only delete the same orphans twice.
func (b *Backend) sweepSidecars(ctx context.Context, grace time.Duration) (int, error) {
	prefix := b.metaSidecar("")
	cutoff := time.Now().Add(-grace)
	deleted := 0
	var token *string
	for {
		cctx, cancel := b.call(ctx)
		out, err := b.cli.ListObjectsV2(cctx, &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: &prefix, ContinuationToken: token})
		cancel()
		if err != nil {
			return deleted, mapErr(err)
		}
		for _, o := range out.Contents {
			if aws.ToTime(o.LastModified).After(cutoff) {
				continue
			}
			key := aws.ToString(o.Key)
			id := strings.TrimPrefix(key, prefix)
			if b.sidecarOrphaned(ctx, key, id) {
				if err := b.deleteKey(ctx, key); err == nil {
					deleted++
				}
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			return deleted, nil
		}
		token = out.NextContinuationToken
	}
}

// sidecarOrphaned tells whether no object points at sidecar id any more.
// Any doubt (an error, no tag) keeps the sidecar.
func (b *Backend) sidecarOrphaned(ctx context.Context, key, id string) bool {
	sc, err := b.head(ctx, key)
	if err != nil {
		return false
	}
	tag, ok := sc.Metadata[sidecarObjKey]
	if !ok {
		return false
	}
	full, err := base64.RawURLEncoding.DecodeString(tag)
	if err != nil {
		return false
	}
	obj, err := b.head(ctx, string(full))
	if isNotFound(err) {
		return true
	}
	return err == nil && obj.Metadata[metaRefKey] != id
}
