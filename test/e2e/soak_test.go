package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestSoakShort is `facet bench soak` in small (issue 22 item 7): 200
// keep-alive connections of mixed PUT/GET/LIST/DELETE for 20 s against the
// facet serve it starts, after 16 connections for 5 s. Every GET checks its
// bytes; the run must end with no error of any kind, the server must really
// hold about 200 connections, and its memory may grow by half at most (the
// 10-minute soak's bound is 10%; 20 s is mostly warm-up noise).
func TestSoakShort(t *testing.T) {
	const conns = 200
	out := filepath.Join(t.TempDir(), "soak.json")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, facetBin, "bench", "soak", "--connections", "200", "--baseline-connections", "16",
		"--duration", "20s", "--baseline-duration", "5s", "--warmup", "5s", "--sample-every", "2s", "--max-rss-growth", "50", "--json", out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("facet bench soak: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("\n%s", stdout.String())
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Phases []struct {
			Connections int   `json:"connections"`
			Errors      int64 `json:"errors"`
			Ops         []struct {
				Op  string `json:"op"`
				Ops int64  `json:"ops"`
			} `json:"ops"`
			RSSStartMiB float64 `json:"rss_start_mib"`
			FDsMax      int     `json:"fds_max"`
		} `json:"phases"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Phases) != 2 || res.Phases[0].Connections != 16 || res.Phases[1].Connections != conns {
		t.Fatalf("phases: %+v", res.Phases)
	}
	for _, p := range res.Phases {
		if p.Errors != 0 {
			t.Errorf("%d connections: %d errors", p.Connections, p.Errors)
		}
		seen := map[string]bool{}
		for _, o := range p.Ops {
			if o.Ops > 0 {
				seen[o.Op] = true
			}
		}
		for _, op := range []string{"PUT", "GET", "LIST", "DELETE"} {
			if !seen[op] {
				t.Errorf("%d connections: no %s completed", p.Connections, op)
			}
		}
	}
	soak := res.Phases[1]
	if soak.RSSStartMiB <= 0 {
		t.Error("the server's memory was not sampled")
	}
	// Each connection is its own TCP connection: the server holds them all
	// (plus its listeners and data files).
	if soak.FDsMax < conns {
		t.Errorf("the server had at most %d files open during the soak, fewer than %d connections", soak.FDsMax, conns)
	}
}
