package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// The whole path in one process: an SLO set through the admin API limits
// the tenant's bytes and operations at the S3 front end, the /bw view
// shows the flow, and an operation over the rate is refused with 503
// SlowDown and the bucket's Retry-After.
func TestQoSThroughTheFrontEnd(t *testing.T) {
	client, _, adminAddr := startWith(t, func(o *Options) { o.QoS = QoSOptions{Period: 100 * time.Millisecond} })
	ctx := context.Background()
	admin := func(method, path, body string) (int, []byte) {
		req, _ := http.NewRequest(method, "http://"+adminAddr+"/v1"+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testTok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("qos-b")}); err != nil {
		t.Fatal(err)
	}
	if st, b := admin(http.MethodPut, "/slos/tenant1", `{"limit":"2MB/s","ops":4}`); st != http.StatusOK {
		t.Fatalf("put SLO: %d %s", st, b)
	}
	time.Sleep(300 * time.Millisecond) // the ops bucket refills after CreateBucket
	body := bytes.Repeat([]byte("q"), 1<<20)
	start := time.Now()
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("qos-b"), Key: aws.String("k"), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	// 1 MiB at 2 MB/s, less a burst of 64 KiB: a lower bound only.
	if el := time.Since(start); el < 400*time.Millisecond {
		t.Fatalf("1 MiB PUT under a 2 MB/s limit took %v", el)
	}
	st, b := admin(http.MethodGet, "/bw", "")
	if st != http.StatusOK || !strings.Contains(string(b), `"tenant": "tenant1"`) || !strings.Contains(string(b), `"class": "put"`) {
		t.Fatalf("bw: %d %s", st, b)
	}
	// Operations over 4/s: the bucket holds one, the queue 250 ms; eight
	// HEADs at once without retries meet SlowDown.
	var mu sync.Mutex
	var wg sync.WaitGroup
	var slowdowns int
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("qos-b"), Key: aws.String("k")},
				func(o *s3.Options) { o.RetryMaxAttempts = 1 })
			var re interface{ HTTPStatusCode() int }
			mu.Lock()
			defer mu.Unlock()
			if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusServiceUnavailable {
				slowdowns++
			} else if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if slowdowns == 0 {
		t.Fatal("8 HEADs at once under ops=4/s were all admitted")
	}
}
