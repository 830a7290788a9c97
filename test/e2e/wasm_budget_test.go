package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// TestWasmBudgetHostileTenant is issue 22's attack on the WASM runtime:
// 8 spinning filters kept both cores busy (another tenant's GET median
// went from 1 ms to 91 ms) and 8 memory-hungry ones took 922 MB. Tenant A
// now keeps 16 hostile requests in flight (8 through a filter that loops,
// 8 through one that fills memory up to its cap), and tenant B's GET
// p99 stays within 2x of its idle value; A's requests are answered 503
// SlowDown (the node's budget) or FilterFailed (the filter's own deadline
// or memory cap), never 500, while B's own WASM requests wait their turn
// and succeed; the server's peak RSS stays under the memory budget over
// its baseline. Ratios only: nothing is timed absolutely.
func TestWasmBudgetHostileTenant(t *testing.T) {
	const (
		hostile   = 16
		gets      = 200
		budgetMiB = 512 // --wasm-memory-budget's default
	)
	srv := startServer(t, t.TempDir())
	ca, cb := srv.createTenant(t, "hoga"), srv.createTenant(t, "calmb")
	a, b := srv.sdk(ca), srv.sdk(cb)
	mkBucket(t, a, "spin")
	mkBucket(t, a, "hog")
	mkBucket(t, b, "calm")
	for _, f := range []struct{ name, mode string }{{"spinner", "loop"}, {"hogger", "fill"}} {
		if out, err := srv.ctl(t, "filter", "create", f.name, "--wasm", wasmModule(t, "hostile"), "--methods", "PUT",
			"--stages", "gateway", "--param", "mode:string:"+f.mode); err != nil {
			t.Fatalf("filter create %s: %v %s", f.name, err, out)
		}
	}
	srv.policyAdd(t, "FOR BUCKET hoga/spin DO SET spinner")
	srv.policyAdd(t, "FOR BUCKET hoga/hog DO SET hogger")
	// B's own WASM filter, a reversible noop: B's requests through it
	// queue behind A's and get the next slot.
	if out, err := srv.ctl(t, "filter", "create", "bnoop", "--wasm", wasmModule(t, "noop"), "--methods", "PUT,GET",
		"--stages", "gateway", "--reversible"); err != nil {
		t.Fatalf("filter create bnoop: %v %s", err, out)
	}
	mkBucket(t, b, "filtered")
	srv.policyAdd(t, "FOR BUCKET calmb/filtered DO SET bnoop")
	putBytes(t, b, "calm", "small", bytes.Repeat([]byte("b"), 4096))

	ctx := context.Background()
	getP99 := func(phase string) time.Duration {
		lat := make([]time.Duration, 0, gets)
		for range gets {
			t0 := time.Now()
			if _, err := getBytesErr(ctx, b, "calm", "small"); err != nil {
				t.Fatalf("B's GET %s: %v", phase, err)
			}
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		p99 := lat[len(lat)*99/100]
		t.Logf("B's GET %s: p50 %v, p99 %v", phase, lat[len(lat)/2].Round(10*time.Microsecond), p99.Round(10*time.Microsecond))
		return p99
	}
	getP99("warm-up")
	idleBefore := getP99("idle")
	baseKB, err := procStatusKB(srv.pid(), "VmHWM")
	if err != nil {
		t.Fatal(err)
	}

	// A keeps 16 hostile PUTs in flight until B is done.
	var (
		stop                        atomic.Bool
		wg                          sync.WaitGroup
		slowDown, failed, succeeded atomic.Int64
		mu                          sync.Mutex
		unexpected                  []string
		slowDownMsg                 atomic.Value
	)
	for i := range hostile {
		bucket := "spin"
		if i%2 == 1 {
			bucket = "hog"
		}
		wg.Go(func() {
			for n := 0; !stop.Load(); n++ {
				_, err := a.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(fmt.Sprintf("k%d-%d", i, n)),
					Body: strings.NewReader("hostile")})
				var ae smithy.APIError
				switch {
				case err == nil:
					succeeded.Add(1)
				case errors.As(err, &ae) && ae.ErrorCode() == "SlowDown":
					slowDown.Add(1)
					slowDownMsg.Store(ae.ErrorMessage())
				case errors.As(err, &ae) && ae.ErrorCode() == "FilterFailed":
					failed.Add(1)
				default:
					mu.Lock()
					unexpected = append(unexpected, err.Error())
					mu.Unlock()
				}
			}
		})
	}
	// Measure once the filters run and requests queue behind them.
	eventually(t, 30*time.Second, "A's hostile requests fill the budget and queue", func() error {
		run, _ := srv.metricValue(t, "facet_wasm_instances_running")
		waiting, _ := srv.metricValue(t, "facet_wasm_queue_waiting")
		if run < 1 || waiting < 1 {
			return fmt.Errorf("%v instances running, %v requests waiting", run, waiting)
		}
		return nil
	})
	loaded := getP99(fmt.Sprintf("while A keeps %d hostile WASM requests in flight", hostile))
	// B's WASM requests wait behind A's instances but take the next slot
	// (B holds none and was served longest ago), within the queue timeout
	// (6 s, over the 5 s instance deadline): no SlowDown for B.
	for i := range 2 {
		key := fmt.Sprintf("f%d", i)
		body := bytes.Repeat([]byte{byte('0' + i)}, 1000)
		t0 := time.Now()
		if _, err := b.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("filtered"), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatalf("B's PUT through its WASM filter under A's load: %v", err)
		}
		got, err := getBytesErr(ctx, b, "filtered", key)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("B's GET through its WASM filter under A's load: %v", err)
		}
		t.Logf("B's PUT and GET through its WASM filter under A's load took %v", time.Since(t0).Round(time.Millisecond))
	}
	// Let the queue time out at least once, then stop A.
	eventually(t, 30*time.Second, "a hostile request is refused with SlowDown", func() error {
		if slowDown.Load() == 0 {
			return errors.New("no SlowDown yet")
		}
		return nil
	})
	stop.Store(true)
	wg.Wait()
	peakKB, err := procStatusKB(srv.pid(), "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	idleAfter := getP99("idle again")

	// The idle reference is the larger of the two idle runs: this machine
	// is shared, and its load moves between them. The margin: twice the
	// idle p99, or the idle p99 plus 50 ms when that is more. A GET's p99
	// on an idle loopback server is a millisecond or two, so "2x" alone
	// would fail on one scheduling hiccup of the shared machine (a 10 ms
	// time slice of another process); 50 ms stays far below what the
	// attack did (91 ms median, seconds at p99), so the test still fails
	// when spinning instances take every core.
	idle := max(idleBefore, idleAfter)
	limit := max(2*idle, idle+50*time.Millisecond)
	t.Logf("A: %d SlowDown, %d FilterFailed, %d stored; B's p99 idle %v, loaded %v (ratio %.2f, limit %v); peak RSS %d MB, baseline %d MB",
		slowDown.Load(), failed.Load(), succeeded.Load(), idle, loaded, float64(loaded)/float64(idle), limit, peakKB>>10, baseKB>>10)
	if loaded > limit {
		t.Errorf("B's GET p99 under A's hostile load is %v; want at most %v (idle p99 %v)", loaded, limit, idle)
	}
	if len(unexpected) > 0 {
		t.Errorf("A's requests got errors other than SlowDown and FilterFailed: %v", unexpected[:min(len(unexpected), 5)])
	}
	if msg, _ := slowDownMsg.Load().(string); !strings.Contains(msg, "filter budget exhausted") {
		t.Errorf("SlowDown message %q does not say the filter budget is exhausted", msg)
	}
	if peakKB-baseKB > budgetMiB<<10 {
		t.Errorf("peak RSS grew by %d MB under A's load; want under the %d MiB budget", (peakKB-baseKB)>>10, budgetMiB)
	}
}

// getBytesErr reads an object, returning the error rather than failing.
func getBytesErr(ctx context.Context, c *s3.Client, bucket, key string) ([]byte, error) {
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(out.Body)
	return buf.Bytes(), err
}

// TestWasmBudgetMemory: the memory budget binds where the slots do not.
// With 8 slots but 256 MiB of budget (two 128 MiB caps), 16 concurrent
// PUTs through a filter that fills memory until its cap run two at a time;
// the server's peak RSS grows by less than the budget plus a slack for
// what each running request holds outside the sandbox (its buffers, the
// instance's host-side structures: a few MiB each). Without the budget the
// 16 instances would hold up to 128 MiB each at once, 2 GiB.
func TestWasmBudgetMemory(t *testing.T) {
	const (
		concurrent = 16
		rounds     = 3
		budgetMiB  = 256
		slackMiB   = 64
	)
	srv := startServerEnv(t, t.TempDir(), "e2e-admin-"+randHex(16),
		[]string{"FACET_WASM_MAX_INSTANCES=8", fmt.Sprintf("FACET_WASM_MEMORY_BUDGET=%dMiB", budgetMiB), "FACET_WASM_QUEUE_TIMEOUT=30s"})
	c := srv.createTenant(t, "hogm")
	cl := srv.sdk(c)
	mkBucket(t, cl, "hog")
	if out, err := srv.ctl(t, "filter", "create", "hogger", "--wasm", wasmModule(t, "hostile"), "--methods", "PUT",
		"--stages", "gateway", "--param", "mode:string:fill"); err != nil {
		t.Fatalf("filter create: %v %s", err, out)
	}
	srv.policyAdd(t, "FOR BUCKET hogm/hog DO SET hogger")
	baseKB, err := procStatusKB(srv.pid(), "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, concurrent*rounds)
	for i := range concurrent {
		wg.Go(func() {
			for n := range rounds {
				_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("hog"), Key: aws.String(fmt.Sprintf("k%d-%d", i, n)),
					Body: strings.NewReader("hostile")})
				var ae smithy.APIError
				if !errors.As(err, &ae) || ae.ErrorCode() != "FilterFailed" || !strings.Contains(ae.ErrorMessage(), "memory limit exceeded") {
					errs <- fmt.Errorf("PUT through the memory-filling filter: %v; want FilterFailed (memory limit exceeded)", err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	peakKB, err := procStatusKB(srv.pid(), "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	waits, _ := srv.metricValue(t, `facet_wasm_queue_waits_total{outcome="queued",tenant="hogm"}`)
	t.Logf("%d memory-filling instances, %d at a time by memory: %v waited their turn; peak RSS %d MB over a baseline of %d MB",
		concurrent*rounds, budgetMiB/128, waits, (peakKB-baseKB)>>10, baseKB>>10)
	if waits == 0 {
		t.Error("no request waited for memory: the budget did not bind")
	}
	if grew := (peakKB - baseKB) >> 10; grew > budgetMiB+slackMiB {
		t.Errorf("peak RSS grew by %d MB; want under the %d MiB budget + %d MiB", grew, budgetMiB, slackMiB)
	}
}
