package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/sysdev"
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
		req.Header.Set("Authorization", "Bearer tok")
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

type fakeDevices struct {
	places  []sysdev.Placement
	streams []storage.ThreadStream
}

func (f *fakeDevices) Devices() ([]sysdev.Placement, error) { return f.places, nil }
func (f *fakeDevices) Streams() []storage.ThreadStream      { return f.streams }

// The per-device view: the device's own traffic from /proc/diskstats and
// each per-stream thread's read rate, between two samples; a stream not on
// its thread yet is left out, and the first sample knows no device rate.
func TestDeviceSampler(t *testing.T) {
	proc := t.TempDir()
	stats := func(read, written uint64) {
		line := fmt.Sprintf("254 0 vda 1 0 %d 0 1 0 %d 0 0 0 0\n", read/512, written/512)
		if err := os.WriteFile(filepath.Join(proc, "diskstats"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Unix(1000, 0)
	since := now.Add(-time.Second)
	src := &fakeDevices{places: []sysdev.Placement{{Device: &sysdev.Device{Name: "vda"}}}}
	s := &deviceSampler{src: src, dev: sysdev.Reader{Proc: proc}, now: func() time.Time { return now }}
	stats(1<<20, 0)
	src.streams = []storage.ThreadStream{{TID: 7, Flow: "t1/etl", Need: 4e6, Bytes: 2e6, Since: since}, {TID: 0, Since: now}}
	d := s.sample(context.Background())
	if len(d) != 1 || d[0].Device != "vda" || d[0].Served != -1 || d[0].Asked != 4e6 || len(d[0].Streams) != 1 || d[0].Streams[0].Served != 2e6 {
		t.Fatalf("first sample %+v", d)
	}
	now = now.Add(500 * time.Millisecond)
	stats(4<<20, 1<<20) // 3 MiB read, 1 MiB written in 0.5 s
	src.streams = []storage.ThreadStream{{TID: 7, Flow: "t1/etl", Need: 4e6, Bytes: 3.5e6, Since: since}, {TID: 8, Bytes: 1e5, Since: now.Add(-100 * time.Millisecond)}}
	d = s.sample(context.Background())
	if len(d) != 1 || d[0].Served != 8<<20 || d[0].Asked != 4e6 || len(d[0].Streams) != 2 ||
		math.Abs(d[0].Streams[0].Served-3e6) > 1 || math.Abs(d[0].Streams[1].Served-1e6) > 1 || d[0].Streams[1].Flow != "" {
		t.Fatalf("second sample %+v", d)
	}
	// Without a block device (tmpfs), the device says so and its rate is unknown.
	src.places = []sysdev.Placement{{Mount: sysdev.Mount{Point: "/tmp", FSType: "tmpfs"}}}
	if d := s.sample(context.Background()); len(d) != 1 || d[0].Served != -1 || !strings.Contains(d[0].Device, "tmpfs") {
		t.Fatalf("tmpfs %+v", d)
	}
}
