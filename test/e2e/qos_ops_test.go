package e2e

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// A tenant over its operations cap sees latency, not failures (issue 25:
// with ops=20 and 16 threads, 20,220 SlowDowns came back in 15 s and
// boto3's default retries failed 99 of 408 calls). aws-sdk-go-v2 with its
// default retryer (standard, 3 attempts, which does not read
// x-amz-retry-after): every call succeeds, at about the cap, with at most
// about one SlowDown per call; `facet ctl bw` shows the cap, the queued
// and the refused operations.
func TestOpsCapDefaultRetryerSucceeds(t *testing.T) {
	s := startServer(t, t.TempDir())
	cr := s.createTenant(t, "oc")
	// The SDK's defaults: RetryMaxAttempts 0 and no Retryer of our own.
	cl := s.sdk(cr, func(o *s3.Options) { o.RetryMaxAttempts, o.Retryer = 0, nil })
	ctx := t.Context()
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("oc-b")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("oc-b"), Key: aws.String("k"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	const ops, threads, seconds = 20, 16, 4
	if out, err := s.ctl(t, "slo", "set", "oc", "--ops", "20"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	time.Sleep(time.Second) // a QoS period: flows pick the cap up

	var ok, failed atomic.Int64
	var firstErr atomic.Value
	deadline := time.Now().Add(seconds * time.Second)
	start := time.Now()
	var wg sync.WaitGroup
	for range threads {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if _, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("oc-b"), Key: aws.String("k")}); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	bw, err := s.ctl(t, "bw")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d calls in %.1fs (%.1f/s), %d failed\n%s", ok.Load(), elapsed, float64(ok.Load())/elapsed, failed.Load(), bw)
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d calls failed over the ops cap; first: %v", n, n+ok.Load(), firstErr.Load())
	}
	// The cap holds and is used: a ratio with generous margins.
	if rate := float64(ok.Load()) / elapsed; rate < 0.5*ops || rate > 1.5*ops {
		t.Fatalf("%.1f calls/s under a cap of %d/s", rate, ops)
	}
	var row string
	for _, l := range strings.Split(string(bw), "\n") {
		if strings.Contains(l, " oc ") && strings.Contains(l, " get ") {
			row = l
		}
	}
	if !strings.Contains(row, "20.0/s") {
		t.Fatalf("facet ctl bw does not show oc's ops cap:\n%s", bw)
	}
}
