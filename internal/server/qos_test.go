package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/qos"
	"github.com/facet-sds/facet/internal/s3api"
	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/storage/fs"
	"github.com/facet-sds/facet/internal/sysdev"
)

func TestParseSLOSpec(t *testing.T) {
	got, err := ParseSLOSpec(admin.SLOSpec{"get": "30MB/s", "put": 10e6, "limit": "1.5GiB/s", "weight": 2.0, "ops": 100.0, "background": "5MB/s"})
	if err != nil {
		t.Fatal(err)
	}
	want := qos.SLO{Get: 30e6, Put: 10e6, Limit: 1.5 * (1 << 30), Weight: 2, Ops: 100, Background: 5e6}
	if got != want {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	for _, bad := range []admin.SLOSpec{
		{}, {"gte": "1MB/s"}, {"get": "30 parsecs"}, {"get": "1MB/s, SET compression"}, {"get": -1.0},
		{"weight": 0.0}, {"get": true}, {"get": "30MB/s", "weight": "heavy"},
	} {
		if _, err := ParseSLOSpec(bad); !errors.Is(err, admin.ErrInvalidSLO) {
			t.Errorf("ParseSLOSpec(%v) = %v, want ErrInvalidSLO", bad, err)
		}
	}
}

func FuzzParseSLOSpec(f *testing.F) {
	for _, s := range []string{"30MB/s", "1", "1.5GiB/s", "", "x", "1MB/s, SET compression"} {
		f.Add("get", s)
	}
	f.Fuzz(func(t *testing.T, k, v string) {
		s, err := ParseSLOSpec(admin.SLOSpec{k: v})
		if err != nil {
			if !errors.Is(err, admin.ErrInvalidSLO) {
				t.Fatalf("error %v is not ErrInvalidSLO", err)
			}
			return
		}
		if s.IsZero() && v != "0" {
			t.Logf("%s=%q gave a zero SLO", k, v)
		}
	})
}

type owners map[string][]string

func (o owners) ListTenants(context.Context) ([]meta.Tenant, error) {
	var out []meta.Tenant
	for t := range o {
		out = append(out, meta.Tenant{Name: t})
	}
	return out, nil
}

func (o owners) ListBuckets(_ context.Context, tenant string) ([]s3api.BucketEntry, error) {
	var out []s3api.BucketEntry
	for _, b := range o[tenant] {
		out = append(out, s3api.BucketEntry{Name: b})
	}
	return out, nil
}

// The cleanup aborts only expired uploads, in the owner's background flow,
// at the rate the tenant's background cap sets.
func TestMultipartCleanupRunsAsBackground(t *testing.T) {
	ctx := context.Background()
	be, err := fs.Open(ctx, t.TempDir(), fs.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	if err := be.CreateBucket(ctx, "b1"); err != nil {
		t.Fatal(err)
	}
	up, err := be.CreateUpload(ctx, "b1", "big", storage.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	part := bytes.Repeat([]byte("p"), 200<<10)
	if _, err := be.PutPart(ctx, "b1", "big", up.UploadID, 1, storage.PutInput{Body: bytes.NewReader(part), Meta: storage.ObjectMeta{Size: int64(len(part))}}); err != nil {
		t.Fatal(err)
	}
	l := qos.NewLimiter(qos.LimiterConfig{Node: "n1", SLOs: qos.SLOMap{"t1": {Background: 1e6}}})
	c := &multipartCleanup{backend: be, owners: owners{"t1": {"b1"}}, limiter: l, expiry: time.Hour, log: slog.New(slog.DiscardHandler)}

	c.now = time.Now // not expired yet
	if n, err := c.sweep(ctx); err != nil || n != 0 {
		t.Fatalf("fresh upload: aborted %d, %v", n, err)
	}
	c.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if n, err := c.sweep(ctx); err != nil || n != 1 {
		t.Fatalf("expired upload: aborted %d, %v", n, err)
	}
	if _, err := be.GetUpload(ctx, "b1", "big", up.UploadID); !errors.Is(err, storage.ErrUploadNotFound) {
		t.Fatalf("upload still there: %v", err)
	}
	rep := l.Report()
	if len(rep.Flows) != 1 || rep.Flows[0].Class != qos.ClassBackground || rep.Flows[0].Tenant != "t1" || rep.Flows[0].Rate != 1e6 || rep.Flows[0].Served == 0 {
		t.Fatalf("background flow not reported as capped: %+v", rep.Flows)
	}
}

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

// The /bw views per node (osinfo): capacity, the flows' rates summed
// (0 once a flow is unlimited: a sum leaving it out would understate what
// the node lets through), served and active streams.
func TestBandwidthViewPerNode(t *testing.T) {
	f := qos.NewFleet(time.Minute)
	f.Add(qos.NodeReport{V: qos.ReportVersion, Node: "gw-a", Stage: qos.StageGateway, Capacity: 80e6, Time: time.Now(), Assigner: "c1", Flows: []qos.FlowStatus{
		{Tenant: "t1", Class: qos.ClassGet, Rate: 30e6, Source: qos.SourceAssigned, Streams: 2, Active: 2, Served: 29e6},
		{Tenant: "t2", Class: qos.ClassPut, Rate: 50e6, Source: qos.SourceAssigned, Streams: 1, Active: 1, Served: 40e6},
	}})
	f.Add(qos.NodeReport{V: qos.ReportVersion, Node: "gw-b", Stage: qos.StageGateway, Time: time.Now(), Flows: []qos.FlowStatus{
		{Tenant: "t1", Class: qos.ClassGet, Rate: 10e6, Source: qos.SourceStatic, Streams: 3, Active: 1, Served: 9e6},
		{Tenant: "t3", Class: qos.ClassGet, Rate: 0, Source: qos.SourceNone, Streams: 1, Active: 1, Served: 70e6},
	}, Devices: []qos.DeviceStatus{{Device: "vda", Served: 75e6, Asked: 5e6, Streams: []qos.ThreadStatus{{TID: 9, Flow: "t1/etl", Need: 5e6, Served: 6e6}}}}})
	v := bandwidthView(f, "")
	if v.Algorithm != "crystal" || len(v.Nodes) != 2 {
		t.Fatalf("%+v", v)
	}
	byNode := map[string]admin.BWNode{}
	for _, n := range v.Nodes {
		byNode[n.Node] = n
	}
	a, b := byNode["gw-a"], byNode["gw-b"]
	if a.Capacity != 80e6 || a.Asked != 80e6 || a.Served != 69e6 || a.Streams != 3 || a.Assigner != "c1" || a.Device != qos.StageGateway || len(a.Flows) != 2 {
		t.Fatalf("gw-a: %+v", a)
	}
	if len(a.Devices) != 0 || len(b.Devices) != 1 || b.Devices[0].Device != "vda" || b.Devices[0].Served != 75e6 || b.Devices[0].Asked != 5e6 ||
		len(b.Devices[0].Streams) != 1 || b.Devices[0].Streams[0] != (admin.BWThread{TID: 9, Flow: "t1/etl", Need: 5e6, Served: 6e6}) {
		t.Fatalf("devices: %+v %+v", a.Devices, b.Devices)
	}
	if b.Capacity != 0 || b.Asked != 0 || b.Served != 79e6 || b.Streams != 2 || len(b.Flows) != 2 {
		t.Fatalf("gw-b (one flow unlimited): %+v", b)
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
