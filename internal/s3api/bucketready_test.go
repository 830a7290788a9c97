package s3api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/ownership"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage/fs"
)

// claimedNow is an ownership table whose buckets were all claimed just now.
type claimedNow struct {
	mu      sync.Mutex
	created map[string]time.Time
}

func (c *claimedNow) ClaimBucket(context.Context, string, string) error { return nil }
func (c *claimedNow) ReleaseBucket(context.Context, string, string) error {
	return nil
}

func (c *claimedNow) BucketOwner(_ context.Context, bucket string) (string, time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.created[bucket]
	if !ok {
		return "", time.Time{}, s3err.ErrNoSuchBucket
	}
	return "t", at, nil
}

func (c *claimedNow) ListBuckets(context.Context, string) ([]ownership.Bucket, error) {
	return nil, nil
}

// A bucket claimed in the metadata store but not yet in the backend (its
// creating gateway is between the two steps) is not usable: a HEAD or a
// PUT waits for the backend to have it, and says NoSuchBucket if it never
// does; a bucket whose creation never finished answers HEAD 404 whatever
// its age.
func TestClaimedBucketIsUsedOnlyOnceTheBackendHasIt(t *testing.T) {
	st, err := fs.Open(t.Context(), t.TempDir(), fs.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Now()
	claims := &claimedNow{created: map[string]time.Time{"young": now, "old": now.Add(-time.Hour), "late": now}}
	s := New(Config{Backend: st, Buckets: claims, Auth: oneTenant{}})
	do := func(method, path string) int {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		return rec.Code
	}

	// The creating gateway finishes while the request waits.
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = st.CreateBucket(context.Background(), "late")
	}()
	if code := do(http.MethodPut, "/late/k"); code != http.StatusOK {
		t.Fatalf("PUT into a bucket the backend gets 50 ms later: %d", code)
	}

	// It never does: the wait ends (the clock jumps past it).
	var mu sync.Mutex
	s.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
	if code := do(http.MethodHead, "/young"); code != http.StatusNotFound {
		t.Fatalf("HEAD of a bucket only claimed: %d", code)
	}
	if code := do(http.MethodPut, "/young/k"); code != http.StatusNotFound {
		t.Fatalf("PUT into a bucket only claimed: %d", code)
	}
	if code := do(http.MethodHead, "/old"); code != http.StatusNotFound {
		t.Fatalf("HEAD of a claim whose creation never finished: %d", code)
	}
	if err := st.CreateBucket(t.Context(), "young"); err != nil {
		t.Fatal(err)
	}
	if code := do(http.MethodHead, "/young"); code != http.StatusOK {
		t.Fatalf("HEAD once the backend has it: %d", code)
	}
}
