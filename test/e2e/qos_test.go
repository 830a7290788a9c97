package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// QoS across a fleet: two gateways sharing Redis, the bus and versitygw, a
// `facet controller` running the bandwidth controller. Capacity is
// configured at 20 MB/s per gateway (40 MB/s in all, well under what this
// machine serves, so the shares come from the controller and not from
// contention); SLOs 15/10/- MB/s scale the 30/20/- of 80 MB/s.
// Expected after convergence: reservation plus an equal third of the 15
// MB/s spare, 20/15/5 MB/s. The band is generous (±25%); the exact
// accuracy is the benchmark's (facet bench qos).
func TestQoSBandwidthShares(t *testing.T) {
	c := startCluster(t, clusterOptions{Gateways: 2, Controllers: 1,
		Env: []string{"FACET_QOS_CAPACITY=20MB/s", "FACET_QOS_PERIOD=500ms"}})
	tenants := []string{"qa", "qb", "qc"}
	const size = 1 << 20
	payload := bytes.Repeat([]byte("facet-qos"), size/9+1)[:size]
	var cr []creds
	for _, name := range tenants {
		k := c.gw[0].createTenant(t, name)
		cr = append(cr, k)
		cl := c.gw[0].sdk(k)
		ctx := t.Context()
		if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name + "-b")}); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(name + "-b"), Key: aws.String("obj"), Body: bytes.NewReader(payload)}); err != nil {
			t.Fatal(err)
		}
	}
	// qa through the API, qb through the DSL.
	if out, err := c.gw[0].ctl(t, "slo", "set", "qa", "--get", "15MB/s"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	c.gw[1].policyAdd(t, "FOR TENANT qb DO SET bandwidth WITH get=10MB/s")
	out, err := c.gw[1].ctl(t, "slo", "list", "-o", "json")
	if err != nil || !strings.Contains(string(out), `"tenant":"qa","source":"api"`) || !strings.Contains(string(out), `"tenant":"qb","source":"policy"`) {
		t.Fatalf("slo list: %v %s", err, out)
	}

	// Two GET streams per tenant on each gateway, for the whole test.
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	counters := make([]atomic.Int64, len(tenants))
	running := make([]atomic.Bool, len(tenants))
	for i := range tenants {
		running[i].Store(true)
		for _, gw := range c.gw {
			cl := gw.sdk(cr[i])
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					getLoop(ctx, cl, tenants[i]+"-b", &counters[i], &running[i])
				}()
			}
		}
	}
	t.Cleanup(func() { stop(); wg.Wait() })

	measure := func(window int) []float64 { return medianRates(counters, window) }
	// within waits for the shares to settle, then checks the medians of a
	// window; a machine busy with other work gets two more windows.
	within := func(phase string, want []float64) {
		t.Helper()
		time.Sleep(3 * time.Second)
		var bad []string
		for attempt := range 3 {
			got := measure(4)
			t.Logf("%s (window %d): MB/s %s = %.1f, want %.1f", phase, attempt+1, strings.Join(tenants, "/"), got, want)
			bad = bad[:0]
			for i := range want {
				if want[i] >= 0 && math.Abs(got[i]-want[i]) > 0.25*want[i] {
					bad = append(bad, fmt.Sprintf("%s got %.1f MB/s, want %.1f ±25%%", tenants[i], got[i], want[i]))
				}
			}
			if len(bad) == 0 {
				return
			}
		}
		bw, _ := c.gw[0].ctl(t, "bw")
		t.Errorf("%s: %s\n%s", phase, strings.Join(bad, "; "), bw)
	}

	within("SLOs 15/10/-", []float64{20, 15, 5})

	// The /bw views show both gateways' flows, assigned by the controller.
	var bw struct {
		Nodes []struct {
			Node     string `json:"node"`
			Assigner string `json:"assigner"`
			Flows    []struct {
				Tenant string `json:"tenant"`
				Source string `json:"source"`
			} `json:"flows"`
		} `json:"nodes"`
	}
	out, err = c.gw[1].ctl(t, "bw", "-o", "json")
	if err != nil || json.Unmarshal(out, &bw) != nil || len(bw.Nodes) != 2 {
		t.Fatalf("ctl bw: %v %s", err, out)
	}
	for _, n := range bw.Nodes {
		if n.Assigner == "" || len(n.Flows) < 3 || n.Flows[0].Source != "assigned" {
			t.Errorf("node %s is not under the controller's assignment: %s", n.Node, out)
		}
	}
	// osinfo: one line per node, the capacity, the assigned rates summed
	// (never past the capacity), what was served, active streams.
	var oi struct {
		Nodes []struct {
			Node     string            `json:"node"`
			Capacity float64           `json:"capacity"`
			Asked    float64           `json:"asked"`
			Served   float64           `json:"served"`
			Flows    []json.RawMessage `json:"flows"`
		} `json:"nodes"`
	}
	out, err = c.gw[0].ctl(t, "bw", "--osinfo", "-o", "json")
	if err != nil || json.Unmarshal(out, &oi) != nil || len(oi.Nodes) != 2 {
		t.Fatalf("ctl bw --osinfo: %v %s", err, out)
	}
	for _, n := range oi.Nodes {
		if n.Capacity != 20e6 || n.Asked <= 0 || n.Asked > 20e6*1.001 || n.Served <= 0 || len(n.Flows) != 0 {
			t.Errorf("osinfo of %s: %s", n.Node, out)
		}
	}
	if out, err := c.gw[0].ctl(t, "bw", "--osinfo"); err != nil || !strings.Contains(string(out), "20.00MB/s") || !strings.Contains(string(out), oi.Nodes[1].Node) {
		t.Errorf("ctl bw --osinfo (table): %v\n%s", err, out)
	}

	// An SLO change mid-run takes effect: qc reserves 15 MB/s, the
	// reservations now fill the capacity.
	if out, err := c.gw[1].ctl(t, "slo", "set", "qc", "--get", "15MB/s"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	within("SLOs 15/10/15", []float64{15, 10, 15})

	// An idle tenant leaves its reservation to the others: qa stops, its
	// 15 MB/s goes to qb and qc (7.5 each on top of their reservations).
	running[0].Store(false)
	within("qa idle", []float64{-1, 17.5, 22.5})

	// Without the controller the gateways keep its last assignment, then
	// (after 20 periods) fall back to static local rates: the SLO limits,
	// here none, so the flows run unlimited.
	c.controllers[0].kill9()
	sources := func() map[string]int {
		out, err := c.gw[0].ctl(t, "bw", "-o", "json")
		if err != nil || json.Unmarshal(out, &bw) != nil {
			t.Fatalf("ctl bw: %v %s", err, out)
		}
		n := map[string]int{}
		for _, node := range bw.Nodes {
			for _, f := range node.Flows {
				n[f.Source]++
			}
		}
		return n
	}
	time.Sleep(2 * time.Second)
	if n := sources(); n["assigned"] == 0 || n["none"] > 0 {
		t.Errorf("2 s after the controller died the last assignment is not kept: %v", n)
	}
	deadline := time.Now().Add(30 * time.Second)
	for n := sources(); n["assigned"] > 0 || n["none"] == 0; n = sources() {
		if time.Now().After(deadline) {
			t.Fatalf("gateways never fell back to static rates without a controller: %v", n)
		}
		time.Sleep(time.Second)
	}
}

// getLoop GETs bucket/obj until ctx ends, counting the bytes received;
// while running is false it stays idle.
func getLoop(ctx context.Context, cl *s3.Client, bucket string, n *atomic.Int64, running *atomic.Bool) {
	buf := make([]byte, 32<<10)
	for ctx.Err() == nil {
		if !running.Load() {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("obj")})
		if err != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		for {
			k, err := out.Body.Read(buf)
			n.Add(int64(k))
			if err != nil {
				break
			}
		}
		out.Body.Close()
	}
}

// medianRates samples byte counters once a second for window seconds and
// returns each one's median MB/s: robust to the seconds a loaded machine
// starves every process alike.
func medianRates(counters []atomic.Int64, window int) []float64 {
	prev := make([]int64, len(counters))
	for i := range counters {
		prev[i] = counters[i].Load()
	}
	perSecond := make([][]float64, len(counters))
	for range window {
		t0 := time.Now()
		time.Sleep(time.Second)
		el := time.Since(t0).Seconds()
		for i := range counters {
			n := counters[i].Load()
			perSecond[i] = append(perSecond[i], float64(n-prev[i])/el/1e6)
			prev[i] = n
		}
	}
	med := make([]float64, len(counters))
	for i, xs := range perSecond {
		slices.Sort(xs)
		med[i] = xs[len(xs)/2]
	}
	return med
}

// Facet's own background work runs in the owner's background class, which
// a policy caps (as Crystal capped replication): the multipart cleanup of
// a 4 MiB upload under FOR ALL TENANTS ... background=1MB/s shows in /bw
// as the tenant's background flow, held to the cap and waiting for
// tokens, until the upload is gone.
func TestBackgroundCappedByPolicy(t *testing.T) {
	s := startServerEnv(t, t.TempDir(), "e2e-admin-"+randHex(16),
		[]string{"FACET_MULTIPART_EXPIRY=1s", "FACET_MULTIPART_SWEEP=500ms", "FACET_QOS_PERIOD=250ms"})
	c := s.createTenant(t, "bgcap")
	cl := s.sdk(c)
	mkBucket(t, cl, "bgcap-b")
	s.policyAdd(t, "FOR ALL TENANTS DO SET bandwidth WITH background=1MB/s")
	out, err := s.ctl(t, "slo", "get", "bgcap", "-o", "json")
	if err != nil || !strings.Contains(string(out), `"source":"policy"`) || !strings.Contains(string(out), `"background":1000000`) {
		t.Fatalf("the policy's SLO: %v %s", err, out)
	}
	up, err := cl.CreateMultipartUpload(ctxT(t), &s3.CreateMultipartUploadInput{Bucket: aws.String("bgcap-b"), Key: aws.String("left")})
	if err != nil {
		t.Fatal(err)
	}
	part := bytes.Repeat([]byte("unfinished"), 4<<20/10)
	if _, err := cl.UploadPart(ctxT(t), &s3.UploadPartInput{Bucket: aws.String("bgcap-b"), Key: aws.String("left"), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader(part)}); err != nil {
		t.Fatal(err)
	}

	type flow struct {
		Tenant string  `json:"tenant"`
		Class  string  `json:"class"`
		Asked  float64 `json:"asked"`
		Source string  `json:"source"`
		Waited float64 `json:"waited_seconds"`
	}
	var seen []flow
	deadline := time.Now().Add(60 * time.Second)
	for {
		var bw struct {
			Nodes []struct {
				Flows []flow `json:"flows"`
			} `json:"nodes"`
		}
		out, err := s.ctl(t, "bw", "-o", "json")
		if err != nil || json.Unmarshal(out, &bw) != nil {
			t.Fatalf("ctl bw: %v %s", err, out)
		}
		for _, n := range bw.Nodes {
			for _, f := range n.Flows {
				if f.Tenant == "bgcap" && f.Class == "background" {
					seen = append(seen, f)
				}
			}
		}
		ups, err := cl.ListMultipartUploads(ctxT(t), &s3.ListMultipartUploadsInput{Bucket: aws.String("bgcap-b")})
		if err != nil {
			t.Fatal(err)
		}
		if len(ups.Uploads) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the expired upload was never cleaned up; background flows seen %+v", seen)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(seen) == 0 {
		t.Fatal("the cleanup never showed as the tenant's background flow")
	}
	waited := false
	for _, f := range seen {
		if f.Asked <= 0 || f.Asked > 1e6 {
			t.Fatalf("background flow at %v B/s (%s), want at most the policy's 1 MB/s", f.Asked, f.Source)
		}
		waited = waited || f.Waited > 0
	}
	if !waited {
		t.Fatalf("the capped cleanup never waited for tokens: %+v", seen)
	}
}

// A reservation is a floor, never a limit (issue 25): on an idle `facet
// serve` with no --qos-capacity, `slo set acme --get 20MB/s` made acme's
// own 100 MB GET about 9× slower: the node's capacity, estimated from the
// most it had moved in a period (here the PUTs'), held the reserved flow
// and grew 10% a period. On a fresh server, a tenant with a reservation
// then one without GET, each alone: a GET read slowly for 1.5 s (the
// controller sees the flow and assigns it), then GETs back to back for
// 2 s. The first's median GET must be within 10% of the second's; a busy
// machine gets two more rounds, each on a fresh server (the estimate only
// held GETs while the node had not moved more).
func TestIdleReservationIsNotALimit(t *testing.T) {
	const size = 64 << 20
	payload := bytes.Repeat([]byte("facet-qos"), size/9+1)[:size]
	tenants := []string{"acme", "plain"}
	var ratio float64
	for round := range 3 {
		s := startServer(t, t.TempDir())
		var cls []*s3.Client
		for _, name := range tenants {
			cl := s.sdk(s.createTenant(t, name))
			mkBucket(t, cl, name+"-b")
			if _, err := cl.PutObject(ctxT(t), &s3.PutObjectInput{Bucket: aws.String(name + "-b"), Key: aws.String("obj"), Body: bytes.NewReader(payload)}); err != nil {
				t.Fatal(err)
			}
			cls = append(cls, cl)
		}
		if out, err := s.ctl(t, "slo", "set", "acme", "--get", "20MB/s"); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		get := func(i int) io.ReadCloser {
			out, err := cls[i].GetObject(ctxT(t), &s3.GetObjectInput{Bucket: aws.String(tenants[i] + "-b"), Key: aws.String("obj")})
			if err != nil {
				t.Fatal(err)
			}
			return out.Body
		}
		// rate is the median MB/s of tenant i's GETs once its flow is
		// under way (a median: robust to the moments a busy machine takes
		// from every process).
		rate := func(i int) float64 {
			body := get(i)
			buf := make([]byte, 256<<10)
			for range 6 { // 1.5 MiB in 1.5 s
				if _, err := io.ReadFull(body, buf); err != nil {
					t.Fatal(err)
				}
				time.Sleep(250 * time.Millisecond)
			}
			_, err := io.Copy(io.Discard, body)
			body.Close()
			var rates []float64
			for t0 := time.Now(); err == nil && time.Since(t0) < 2*time.Second; {
				t1 := time.Now()
				body = get(i)
				var n int64
				n, err = io.Copy(io.Discard, body)
				body.Close()
				rates = append(rates, float64(n)/time.Since(t1).Seconds()/1e6)
			}
			if err != nil {
				t.Fatalf("GET %s: %v", tenants[i], err)
			}
			slices.Sort(rates)
			return rates[len(rates)/2]
		}
		var got [2]float64
		for i := range tenants {
			// Two periods apart: the other tenant's flow has no demand
			// left, each tenant is alone on the server.
			time.Sleep(1200 * time.Millisecond)
			got[i] = rate(i)
		}
		ratio = got[1] / got[0]
		t.Logf("round %d: GETs with a 20 MB/s reservation %.0f MB/s, without %.0f MB/s: %.2f× slower", round+1, got[0], got[1], ratio)
		if ratio <= 1.1 {
			return
		}
		bw, _ := s.ctl(t, "bw")
		t.Logf("%s", bw)
		_, _ = s.terminate(20 * time.Second)
	}
	t.Fatalf("GETs with an idle reservation are %.2f× slower than without (want ≤ 1.10×)", ratio)
}

// A tenant starved on one gateway (issue 25): two gateways of 25 MB/s,
// A reserving 20 MB/s and GETting through gateway 2 only, B reserving 10
// and C with no SLO GETting through both. The per-node algorithm gave C
// 0.02 MB/s on gateway 2 and A none of the spare. Fleet-wide first (the
// model with its 5% minimum share, worked out in docs/qos.md and
// TestAsymmetricFleet): A 22.5, B 18.75 (17.5 + 1.25), C 8.75 (7.5 +
// 1.25). Each tenant must be within 10% of its share fleet-wide over a
// window, every rate the controller assigns to a flow with demand at
// least 5% of its node, and what each flow moved at least 90% of that.
func TestQoSAsymmetricFleet(t *testing.T) {
	c := startCluster(t, clusterOptions{Gateways: 2, Controllers: 1,
		Env: []string{"FACET_QOS_CAPACITY=25MB/s", "FACET_QOS_PERIOD=500ms"}})
	tenants := []string{"qa", "qb", "qc"}
	const size = 1 << 20
	payload := bytes.Repeat([]byte("facet-qos"), size/9+1)[:size]
	var cr []creds
	for _, name := range tenants {
		k := c.gw[0].createTenant(t, name)
		cr = append(cr, k)
		cl := c.gw[0].sdk(k)
		mkBucket(t, cl, name+"-b")
		if _, err := cl.PutObject(ctxT(t), &s3.PutObjectInput{Bucket: aws.String(name + "-b"), Key: aws.String("obj"), Body: bytes.NewReader(payload)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, slo := range [][]string{{"qa", "--get", "20MB/s"}, {"qb", "--get", "10MB/s"}} {
		if out, err := c.gw[0].ctl(t, append([]string{"slo", "set"}, slo...)...); err != nil {
			t.Fatalf("%v %s", err, out)
		}
	}
	// counters[i*2+g]: tenant i through gateway g; qa only through gw 2.
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	counters := make([]atomic.Int64, 2*len(tenants))
	var running atomic.Bool
	running.Store(true)
	for i := range tenants {
		for g, gw := range c.gw {
			if i == 0 && g == 0 {
				continue
			}
			cl := gw.sdk(cr[i])
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					getLoop(ctx, cl, tenants[i]+"-b", &counters[i*2+g], &running)
				}()
			}
		}
	}
	t.Cleanup(func() { stop(); wg.Wait() })

	want := []float64{22.5, 18.75, 8.75}
	const capacity, minShare = 25.0, 0.05
	var bad []string
	for attempt := range 3 {
		time.Sleep(3 * time.Second)
		start := make([]int64, len(counters))
		for i := range counters {
			start[i] = counters[i].Load()
		}
		t0 := time.Now()
		time.Sleep(6 * time.Second)
		el := time.Since(t0).Seconds()
		got := make([]float64, len(counters))
		for i := range counters {
			got[i] = float64(counters[i].Load()-start[i]) / el / 1e6
		}
		bad = bad[:0]
		for i, name := range tenants {
			fleet := got[i*2] + got[i*2+1]
			t.Logf("window %d: %s gw1 %.2f gw2 %.2f fleet %.2f MB/s, want %.2f", attempt+1, name, got[i*2], got[i*2+1], fleet, want[i])
			if math.Abs(fleet-want[i]) > 0.1*want[i] {
				bad = append(bad, fmt.Sprintf("%s got %.2f MB/s fleet-wide, want %.2f ±10%%", name, fleet, want[i]))
			}
			for g := range c.gw {
				if (i != 0 || g == 1) && got[i*2+g] < 0.9*minShare*capacity {
					bad = append(bad, fmt.Sprintf("%s moved %.2f MB/s on gw%d, under 90%% of its minimum share", name, got[i*2+g], g+1))
				}
			}
		}
		// What the controller assigns: never under the minimum share.
		var bw struct {
			Nodes []struct {
				Node  string `json:"node"`
				Flows []struct {
					Tenant string  `json:"tenant"`
					Asked  float64 `json:"asked"`
					Source string  `json:"source"`
				} `json:"flows"`
			} `json:"nodes"`
		}
		out, err := c.gw[0].ctl(t, "bw", "-o", "json")
		if err != nil || json.Unmarshal(out, &bw) != nil {
			t.Fatalf("ctl bw: %v %s", err, out)
		}
		for _, n := range bw.Nodes {
			for _, f := range n.Flows {
				if f.Source == "assigned" && f.Asked < minShare*capacity*1e6*0.999 {
					bad = append(bad, fmt.Sprintf("%s assigned %.0f B/s on %s, under 5%% of the node", f.Tenant, f.Asked, n.Node))
				}
			}
		}
		if len(bad) == 0 {
			return
		}
	}
	bwOut, _ := c.gw[0].ctl(t, "bw")
	t.Errorf("%s\n%s", strings.Join(bad, "; "), bwOut)
}
