package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestExternalController runs the example out-of-process controller
// (examples/controllers/equalshare) against `facet serve` with the
// built-in bandwidth controller disabled: the built-in one is listed as
// disabled, the example is listed by its heartbeats, its assignment is the
// one in force for the tenant's GETs, and it drops off the list once it
// stops beating.
func TestExternalController(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "equalshare")
	build := exec.Command("go", "build", "-o", bin, "./examples/controllers/equalshare")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the example controller: %v\n%s", err, out)
	}
	data := t.TempDir()
	busAddr := freeAddr(t)
	s := &server{t: t, dataDir: data, s3Addr: freeAddr(t), adminAddr: freeAddr(t), token: "e2e-admin-" + randHex(16), done: make(chan struct{})}
	if err := s.launch([]string{"serve", "--data", data, "--s3-addr", s.s3Addr, "--admin-addr", s.adminAddr, "--admin-token", s.token,
		"--nbd-addr", "off", "--bus-listen", busAddr, "--disable-controller", "bandwidth"}, nil); err != nil {
		t.Fatal(err)
	}

	type status struct {
		ID       string     `json:"id"`
		Kind     string     `json:"kind"`
		State    string     `json:"state"`
		Instance string     `json:"instance"`
		LastSeen *time.Time `json:"last_seen"`
		Reason   string     `json:"reason"`
	}
	controllers := func() map[string]status {
		t.Helper()
		out, err := s.ctl(t, "controller", "list", "-o", "json")
		if err != nil {
			t.Fatal(err)
		}
		var cl struct {
			Controllers []status `json:"controllers"`
		}
		if err := json.Unmarshal(out, &cl); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		m := map[string]status{}
		for _, c := range cl.Controllers {
			m[c.ID] = c
		}
		return m
	}
	if bw := controllers()["bandwidth"]; bw.State != "disabled" || bw.Kind != "global" {
		t.Fatalf("built-in bandwidth controller with --disable-controller bandwidth: %+v", bw)
	}
	if cc := controllers()["context/limits"]; cc.State != "running" {
		t.Errorf("the other controllers run: context/limits %+v", cc)
	}

	// Demand: acme GETs a 1 MiB object in a loop.
	k := s.createTenant(t, "acme")
	cl := s.sdk(k)
	if _, err := cl.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String("acme-b")}); err != nil {
		t.Fatal(err)
	}
	payload := bytes.Repeat([]byte("x"), 1<<20)
	if _, err := cl.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("acme-b"), Key: aws.String("obj"), Body: bytes.NewReader(payload)}); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var n atomic.Int64
	var running atomic.Bool
	running.Store(true)
	wg.Add(1)
	go func() { defer wg.Done(); getLoop(ctx, cl, "acme-b", &n, &running) }()
	t.Cleanup(func() { stop(); wg.Wait() })

	ext := exec.Command(bin, "-bus", "nats://"+busAddr, "-classes", "get", "-capacity", "3MB/s", "-heartbeat", "500ms")
	var extLog bytes.Buffer
	ext.Stderr = &extLog
	if err := ext.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = ext.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = ext.Process.Kill()
		<-exited
	})

	var seen status
	waitUntil(t, 30*time.Second, "the example listed by its heartbeats", func() bool {
		seen = controllers()["external/bandwidth"]
		return seen.Kind == "external" && seen.State == "running" && seen.Instance != "" && seen.LastSeen != nil
	}, func() string { return extLog.String() })
	t.Logf("listed: %+v", seen)

	// Its assignment is in force: the gateway's assigner is its instance,
	// and acme's GET flow runs at the 3 MB/s it assigned.
	var bw struct {
		Nodes []struct {
			Assigner string `json:"assigner"`
			Flows    []struct {
				Tenant string  `json:"tenant"`
				Class  string  `json:"class"`
				Asked  float64 `json:"asked"`
				Source string  `json:"source"`
			} `json:"flows"`
		} `json:"nodes"`
	}
	var raw []byte
	waitUntil(t, 30*time.Second, "acme's GETs under the example's assignment", func() bool {
		var err error
		if raw, err = s.ctl(t, "bw", "-o", "json"); err != nil || json.Unmarshal(raw, &bw) != nil {
			return false
		}
		for _, node := range bw.Nodes {
			for _, f := range node.Flows {
				if node.Assigner == seen.Instance && f.Tenant == "acme" && f.Class == "get" && f.Source == "assigned" && f.Asked == 3e6 {
					return true
				}
			}
		}
		return false
	}, func() string { return string(raw) + "\n" + extLog.String() })

	// Stopped, it drops off the list after three missed heartbeats.
	if err := ext.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-exited
	waitUntil(t, 20*time.Second, "the stopped example dropped from the list", func() bool {
		_, ok := controllers()["external/bandwidth"]
		return !ok
	}, func() string { return "" })
}

// waitUntil polls cond every 200 ms until it holds or timeout passes,
// then fails with what and detail().
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool, detail func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s\n%s", what, detail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
