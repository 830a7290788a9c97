package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/facet-sds/facet/clients/go/facetctx"
)

// Two context classes of one tenant, each with a limit set by a policy
// naming a CONTEXT, loaded through two gateways at once: each class is
// one flow fleet-wide, which the bandwidth controller splits across the
// gateways, so each class's total stays at its limit (enforced per
// gateway, as before, each would reach twice its limit). Measured per
// class. The upper band is what the fleet split proves and holds on any
// machine; the lower one is generous (a busy machine serves less).
func TestContextClassLimitsAcrossGateways(t *testing.T) {
	c := startCluster(t, clusterOptions{Gateways: 2, Controllers: 1,
		Env: []string{"FACET_QOS_CAPACITY=200MB/s", "FACET_QOS_PERIOD=500ms"}})
	cr := c.gw[0].createTenant(t, "cq")
	limits := map[string]float64{"compaction": 3, "flush": 6} // MB/s, fleet-wide
	c.gw[0].policyAdd(t, "FOR TENANT cq CONTEXT compaction DO SET bandwidth WITH limit=3MB/s")
	c.gw[1].policyAdd(t, "FOR TENANT cq CONTEXT flush DO SET bandwidth WITH limit=6MB/s")
	const size = 1 << 20
	payload := bytes.Repeat([]byte("facet-cls"), size/9+1)[:size]
	cl0 := c.gw[0].sdk(cr)
	if _, err := cl0.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String("cq-b")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl0.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("cq-b"), Key: aws.String("obj"), Body: bytes.NewReader(payload)}); err != nil {
		t.Fatal(err)
	}
	classes := []string{"compaction", "flush"}
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	counters := make([]atomic.Int64, len(classes))
	always := &atomic.Bool{}
	always.Store(true)
	for i, class := range classes {
		for _, gw := range c.gw {
			cl := gw.sdk(cr, facetctx.Option)
			cctx := facetctx.With(ctx, facetctx.Block{Workflow: "e2e", Class: class})
			for range 2 {
				wg.Go(func() { getLoop(cctx, cl, "cq-b", &counters[i], always) })
			}
		}
	}
	t.Cleanup(func() { stop(); wg.Wait() })

	time.Sleep(3 * time.Second)
	var bad []string
	for attempt := range 3 {
		got := medianRates(counters, 4)
		t.Logf("window %d: MB/s compaction/flush = %.1f, limits %v fleet-wide", attempt+1, got, limits)
		bad = bad[:0]
		for i, class := range classes {
			lim := limits[class]
			if got[i] > 1.25*lim || got[i] < 0.5*lim {
				bad = append(bad, fmt.Sprintf("%s got %.1f MB/s over two gateways, want its fleet-wide limit %.0f (≤ +25%%, ≥ -50%%)", class, got[i], lim))
			}
		}
		if len(bad) == 0 {
			break
		}
	}
	bw, _ := c.gw[0].ctl(t, "bw", "-o", "json")
	if len(bad) > 0 {
		t.Fatalf("%s\n%s", strings.Join(bad, "; "), bw)
	}

	// Both gateways run each class as a flow of its own, at a rate the
	// controller assigned, and the two rates add up to the class's limit.
	var view struct {
		Nodes []struct {
			Node  string `json:"node"`
			Flows []struct {
				Tenant string  `json:"tenant"`
				Class  string  `json:"class"`
				Asked  float64 `json:"asked"`
				Source string  `json:"source"`
			} `json:"flows"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(bw, &view); err != nil || len(view.Nodes) != 2 {
		t.Fatalf("ctl bw: %v %s", err, bw)
	}
	sum := map[string]float64{}
	for _, n := range view.Nodes {
		for _, f := range n.Flows {
			if class, ok := strings.CutPrefix(f.Class, "ctx:"); ok && f.Tenant == "cq" {
				if f.Source != "assigned" {
					t.Errorf("%s on %s: source %s, want assigned", f.Class, n.Node, f.Source)
				}
				sum[class] += f.Asked
			}
		}
	}
	for class, lim := range limits {
		if s := sum[class] / 1e6; s < 0.95*lim || s > 1.05*lim {
			t.Errorf("%s: assigned %.2f MB/s over the gateways, want %.0f\n%s", class, s, lim, bw)
		}
	}
	// The classes' SLOs are listed with the tenants'.
	out, err := c.gw[1].ctl(t, "slo", "list", "-o", "json")
	if err != nil || !strings.Contains(string(out), `"tenant":"cq","class":"compaction","source":"policy"`) ||
		!strings.Contains(string(out), `"class":"flush"`) {
		t.Errorf("slo list: %v %s", err, out)
	}
}

// A tenant's operations cap is fleet-wide: with ops=5 and HEADs pressing
// on both gateways, the two admit about 5 a second between them (each
// applying the whole cap, as before, they would admit about 10). The
// upper band is what the split proves; the lower one is generous.
func TestOpsCapAcrossGateways(t *testing.T) {
	c := startCluster(t, clusterOptions{Gateways: 2, Controllers: 1, Env: []string{"FACET_QOS_PERIOD=500ms"}})
	cr := c.gw[0].createTenant(t, "oq")
	cl0 := c.gw[0].sdk(cr)
	if _, err := cl0.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String("oq-b")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl0.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("oq-b"), Key: aws.String("k"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	const ops = 5
	if out, err := c.gw[0].ctl(t, "slo", "set", "oq", "--ops", "5"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var admitted atomic.Int64
	for _, gw := range c.gw {
		cl := gw.sdk(cr, func(o *s3.Options) { o.Retryer = aws.NopRetryer{} })
		for range 4 {
			wg.Go(func() {
				for ctx.Err() == nil {
					if _, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("oq-b"), Key: aws.String("k")}); err == nil {
						admitted.Add(1)
					} else {
						time.Sleep(20 * time.Millisecond)
					}
				}
			})
		}
	}
	t.Cleanup(func() { stop(); wg.Wait() })
	time.Sleep(3 * time.Second) // the controller splits the cap
	const window = 6
	var got float64
	for attempt := range 3 {
		n0 := admitted.Load()
		time.Sleep(window * time.Second)
		got = float64(admitted.Load()-n0) / window
		t.Logf("window %d: %.1f operations/s admitted over both gateways (cap %d fleet-wide)", attempt+1, got, ops)
		if got >= 0.4*ops {
			break // a busy machine may admit less; never more
		}
	}
	if got > 1.4*ops || got < 0.4*ops {
		bw, _ := c.gw[0].ctl(t, "bw", "-o", "json")
		t.Fatalf("%.1f operations/s admitted over two gateways, want the fleet-wide cap %d (≤ +40%%, ≥ -60%%)\n%s", got, ops, bw)
	}
}
