package s3api

import (
	"context"
	"sync"
	"time"

	"github.com/facet-sds/facet/internal/s3err"
)

// A bucket is created in two steps: its name is claimed in the metadata
// store (one transaction: of concurrent creates exactly one wins), then
// the backend creates it. Between the two, another gateway sees the claim
// and would answer HEAD 200 and run a PUT into a backend bucket that does
// not exist yet (NoSuchBucket right after a successful create or HEAD).
// So a bucket claimed recently is used only once the backend has it:
// checked once per gateway and bucket, and waited for a moment while the
// creating gateway finishes.
const (
	// youngBucket is how long after its claim a bucket is checked in the
	// backend before use. Generous: the claim's time is the claiming
	// gateway's clock.
	youngBucket = 2 * time.Minute
	// bucketReadyWait bounds the wait for the creating gateway.
	bucketReadyWait = 3 * time.Second
)

// readyBuckets remembers the young buckets this gateway saw in the
// backend, by name and claim time (a bucket deleted and created again is
// checked again).
type readyBuckets struct {
	mu sync.Mutex
	m  map[string]time.Time
}

func (r *readyBuckets) seen(bucket string, created time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.m[bucket]
	return ok && at.Equal(created)
}

func (r *readyBuckets) add(bucket string, created, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]time.Time{}
	}
	if len(r.m) >= 1024 {
		for b, at := range r.m {
			if now.Sub(at) > youngBucket {
				delete(r.m, b)
			}
		}
	}
	r.m[bucket] = created
}

// bucketReady returns nil once the backend has bucket, claimed at
// created; NoSuchBucket if it still lacks it after bucketReadyWait. A
// HEAD of the bucket (what clients ask before they write) always asks
// the backend once per gateway: a claim whose creation never finished is
// no bucket.
func (s *Server) bucketReady(ctx context.Context, bucket string, created time.Time, always bool) error {
	now := s.now()
	if s.ready.seen(bucket, created) || !always && now.Sub(created) > youngBucket {
		return nil
	}
	deadline := now.Add(bucketReadyWait)
	wait := 5 * time.Millisecond
	for {
		ok, err := s.backend.BucketExists(ctx, bucket)
		if err != nil {
			return storageErr(err, bucket, "")
		}
		if ok {
			s.ready.add(bucket, created, now)
			return nil
		}
		if s.now().After(deadline) {
			return &s3err.Error{Code: s3err.NoSuchBucket, Bucket: bucket,
				Message: "The bucket is being created and is not usable yet; try again."}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return s3err.Wrap(s3err.InternalError, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
}
