package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/facet-sds/facet/clients/go/facetctx"
	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/flowctx"
)

func contextFlows(t *testing.T, s *server) map[string]flowctx.FlowStats {
	t.Helper()
	out, err := s.ctl(t, "context", "flows", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var cf admin.ContextFlows
	if err := json.Unmarshal(out, &cf); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	m := map[string]flowctx.FlowStats{}
	for _, f := range cf.Flows {
		m[f.Tenant+"/"+f.Class] = f
	}
	return m
}

// getAll reads bucket/key inside the context block b (none when zero) and
// returns how long the body took.
func getAll(t *testing.T, cl *s3.Client, b *facetctx.Block, bucket, key string) time.Duration {
	t.Helper()
	ctx := ctxT(t)
	if b != nil {
		ctx = facetctx.With(ctx, *b)
	}
	start := time.Now()
	out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	if _, err := io.Copy(io.Discard, out.Body); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

// Two classes of one tenant are separate flows with their own limits
// (policies naming a CONTEXT), measured separately; requests without the
// header go to the tenant's default class, or where its rules say; a
// malformed header is refused with 400 and a message saying what is wrong.
func TestContextClasses(t *testing.T) {
	s := startServer(t, t.TempDir())
	c := s.createTenant(t, "ctx1")
	const limC, limF = 2_000_000, 8_000_000
	if _, err := s.ctl(t, "policy", "add",
		"FOR TENANT ctx1 CONTEXT compaction DO SET bandwidth WITH limit=2MB/s\nFOR TENANT ctx1 CONTEXT flush DO SET bandwidth WITH limit=8MB/s"); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	putOne(t, s, c, "ctxb", "data/obj", body)
	putOne(t, s, c, "ctxb2", "logs/x", []byte("small"))
	cl := s.sdk(c, facetctx.Option)

	var wg sync.WaitGroup
	took := map[string]time.Duration{}
	var mu sync.Mutex
	for _, class := range []string{"compaction", "flush"} {
		wg.Go(func() {
			d := getAll(t, cl, &facetctx.Block{Workflow: "etl-42", Class: class}, "ctxb", "data/obj")
			mu.Lock()
			took[class] = d
			mu.Unlock()
		})
	}
	wg.Wait()
	flows := contextFlows(t, s)
	for class, lim := range map[string]float64{"compaction": limC, "flush": limF} {
		f, ok := flows["ctx1/"+class]
		if !ok || f.Served < int64(len(body)) || f.Requests != 1 || f.Unlimited || f.Rate != lim {
			t.Fatalf("flow ctx1/%s: %+v", class, f)
		}
		// A token bucket never passes more than rate × time + burst: an
		// upper bound that holds on any machine.
		if max := lim*took[class].Seconds() + 2*64<<10 + 0.05*lim; float64(len(body)) > max {
			t.Errorf("%s read %d bytes in %v: over its %.0f B/s limit", class, len(body), took[class], lim)
		}
	}
	if took["compaction"] <= took["flush"] {
		t.Errorf("compaction (2 MB/s) took %v, flush (8 MB/s) %v", took["compaction"], took["flush"])
	}

	// No header: the tenant's default class, unlimited.
	getAll(t, cl, nil, "ctxb2", "logs/x")
	if f, ok := contextFlows(t, s)["ctx1/"+flowctx.DefaultClass]; !ok || !f.Unlimited || f.Requests < 1 {
		t.Fatalf("default class flow: %+v", f)
	}
	// Rules: logs/ goes to batch, the rest to fg.
	if _, err := s.ctl(t, "context", "rules", "set", "ctx1", `{"default":"fg","rules":[{"prefix":"ctxb2/logs/","class":"batch"}]}`); err != nil {
		t.Fatal(err)
	}
	getAll(t, cl, nil, "ctxb2", "logs/x")
	getAll(t, cl, nil, "ctxb", "data/obj")
	flows = contextFlows(t, s)
	if flows["ctx1/batch"].Requests != 1 || flows["ctx1/fg"].Requests != 1 {
		t.Fatalf("rules did not classify: %+v", flows)
	}
	// The other matchers: metadata (name=value, on the x-amz-meta-* of a
	// PUT) and the User-Agent (the SDK's app id is part of it); a header's
	// class still wins over every rule.
	if _, err := s.ctl(t, "context", "rules", "set", "ctx1",
		`{"default":"fg","rules":[{"meta":"job=etl","class":"etl"},{"user_agent":"app/facet-ua-rule","class":"agent"}]}`); err != nil {
		t.Fatal(err)
	}
	put := func(cl *s3.Client, ctx context.Context, key string, md map[string]string) {
		t.Helper()
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("ctxb2"), Key: aws.String(key), Body: strings.NewReader("m"), Metadata: md}); err != nil {
			t.Fatal(err)
		}
	}
	put(cl, ctxT(t), "meta-1", map[string]string{"job": "etl"})
	put(cl, ctxT(t), "meta-2", map[string]string{"job": "other"}) // fg
	uaCl := s.sdk(c, facetctx.Option, func(o *s3.Options) { o.AppID = "facet-ua-rule" })
	getAll(t, uaCl, nil, "ctxb2", "logs/x")
	put(uaCl, facetctx.With(ctxT(t), facetctx.Block{Class: "hdr"}), "ua-hdr", map[string]string{"job": "etl"})
	flows = contextFlows(t, s)
	if flows["ctx1/etl"].Requests != 1 || flows["ctx1/agent"].Requests != 1 || flows["ctx1/hdr"].Requests != 1 || flows["ctx1/fg"].Requests != 2 {
		t.Fatalf("metadata and user-agent rules did not classify: %+v", flows)
	}
	if _, err := s.ctl(t, "context", "rules", "set", "ctx1", `{"rules":[{"class":"x"}]}`); err == nil || !strings.Contains(err.Error(), "matches everything") {
		t.Fatalf("invalid rules: %v", err)
	}

	// A malformed header: 400 InvalidArgument saying what is wrong; the
	// request does nothing.
	for h, msg := range map[string]string{"class": "no '='", "class=A": `class "A"`, "workflow=x;;b=2": "empty pair"} {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, s.endpoint()+"/ctxb/data/obj", nil)
		req.Header.Set(flowctx.Header, h)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		b := html.UnescapeString(string(raw))
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(b, "<Code>InvalidArgument</Code>") || !strings.Contains(b, msg) {
			t.Errorf("header %q: %d %s", h, resp.StatusCode, b)
		}
	}
	// The SDK sees the same error.
	_, err := cl.GetObject(facetctx.With(ctxT(t), facetctx.Block{Class: "Bad Class"}), &s3.GetObjectInput{Bucket: aws.String("ctxb"), Key: aws.String("data/obj")})
	if errCode(err) != "InvalidArgument" {
		t.Fatalf("sdk: %v", err)
	}
}

// The priority controller is selected by flag; a priority controller
// without background classes or capacity is refused at start, saying why.
func TestContextPriorityControllerSelected(t *testing.T) {
	s := &server{t: t, dataDir: t.TempDir(), s3Addr: freeAddr(t), adminAddr: freeAddr(t), token: "e2e-admin-" + randHex(16), done: make(chan struct{})}
	if err := s.launch([]string{"serve", "--data", s.dataDir, "--s3-addr", s.s3Addr, "--admin-addr", s.adminAddr, "--admin-token", s.token,
		"--context-controller", "priority", "--context-background", "flush,compaction", "--context-capacity", "100MB/s",
		"--context-threshold", "10MB/s", "--context-floor", "1MB/s", "--nbd-addr", freeAddr(t)}, nil); err != nil {
		t.Fatal(err)
	}
	out, err := s.ctl(t, "context", "flows", "-o", "json")
	if err != nil || !strings.Contains(string(out), `"controller":"priority"`) {
		t.Fatalf("%v %s", err, out)
	}
	// It runs under the controller supervisor, listed with the others.
	out, err = s.ctl(t, "controller", "list", "-o", "json")
	if err != nil || !strings.Contains(string(out), `"context/priority"`) {
		t.Fatalf("%v %s", err, out)
	}

	cmd := exec.Command(facetBin, "serve", "--data", t.TempDir(), "--s3-addr", freeAddr(t), "--admin-addr", freeAddr(t),
		"--admin-token", testToken(), "--context-controller", "priority", "--nbd-addr", freeAddr(t))
	msg, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "the priority controller needs --context-background") {
		t.Fatalf("%v: %s", err, msg)
	}
	msg, err = exec.Command(facetBin, "serve", "--data", t.TempDir(), "--s3-addr", freeAddr(t), "--admin-addr", freeAddr(t),
		"--admin-token", testToken(), "--context-controller", "silk", "--nbd-addr", freeAddr(t)).CombinedOutput()
	if err == nil || !strings.Contains(string(msg), `context controller "silk"`) {
		t.Fatalf("%v: %s", err, msg)
	}
}

// Priority mode over HTTP: a background GET (class compaction) gets the
// spare bandwidth while the foreground is quiet; in the same control step
// that sees the foreground ramp up over the threshold, the background drops
// to the floor, and it gets the spare back once the foreground is done.
func TestContextPriorityYields(t *testing.T) {
	const capacity, threshold, floor = 40_000_000, 4_000_000, 500_000
	s := &server{t: t, dataDir: t.TempDir(), s3Addr: freeAddr(t), adminAddr: freeAddr(t), token: "e2e-admin-" + randHex(16), done: make(chan struct{})}
	if err := s.launch([]string{"serve", "--data", s.dataDir, "--s3-addr", s.s3Addr, "--admin-addr", s.adminAddr, "--admin-token", s.token,
		"--context-controller", "priority", "--context-background", "compaction", "--context-capacity", "40MB/s",
		"--context-threshold", "4MB/s", "--context-floor", "500KB/s", "--context-period", "250ms", "--nbd-addr", freeAddr(t)}, nil); err != nil {
		t.Fatal(err)
	}
	c := s.createTenant(t, "prio")
	big := bytes.Repeat([]byte("background work "), 1<<22) // 64 MiB
	putOne(t, s, c, "prio-b", "bg", big)
	// The foreground is capped at 8 MB/s, so that it stays over the
	// threshold for several periods (2 s) whatever the machine's speed.
	if _, err := s.ctl(t, "policy", "add", "FOR TENANT prio CONTEXT default DO SET bandwidth WITH limit=8MB/s"); err != nil {
		t.Fatal(err)
	}
	fgBody := bytes.Repeat([]byte("foreground work "), 1<<20) // 16 MiB
	if _, err := s.sdk(c).PutObject(ctxT(t), &s3.PutObjectInput{Bucket: aws.String("prio-b"), Key: aws.String("fg"), Body: bytes.NewReader(fgBody)}); err != nil {
		t.Fatal(err)
	}
	cl := s.sdk(c, facetctx.Option)
	flow := func(class string) flowctx.FlowStats { return contextFlows(t, s)["prio/"+class] }
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; flows %+v", what, contextFlows(t, s))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// The background stream runs for the whole test.
	ctx, stop := context.WithCancel(ctxT(t))
	defer stop()
	bgDone := make(chan error, 1)
	go func() {
		out, err := cl.GetObject(facetctx.With(ctx, facetctx.Block{Class: "compaction"}), &s3.GetObjectInput{Bucket: aws.String("prio-b"), Key: aws.String("bg")})
		if err == nil {
			_, err = io.Copy(io.Discard, out.Body)
			out.Body.Close()
		}
		bgDone <- err
	}()
	waitFor("the background to get the spare", func() bool { f := flow("compaction"); return f.Rate == capacity && f.Served > 0 })

	// The foreground ramps up (the default class, at 8 MB/s, twice the
	// threshold): the step that measures it over the threshold also
	// drops the background to the floor.
	fgDone := make(chan struct{})
	go func() {
		defer close(fgDone)
		getAll(t, cl, nil, "prio-b", "fg")
	}()
	var seen flowctx.FlowStats
	waitFor("the foreground to go over the threshold", func() bool {
		fl := contextFlows(t, s)
		if fl["prio/default"].Measured > threshold {
			seen = fl["prio/compaction"]
			return true
		}
		return false
	})
	if seen.Rate != floor {
		t.Fatalf("the step that saw the foreground at %.0f B/s left the background at %.0f B/s, want the floor %d", flow("default").Measured, seen.Rate, floor)
	}
	<-fgDone
	waitFor("the background to get the spare back", func() bool { return flow("compaction").Rate == capacity })
	stop()
	<-bgDone
}
