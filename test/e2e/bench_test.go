package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// benchReport is the part of `facet bench run`'s result.json this test
// checks (the schema is internal/bench.Report).
type benchReport struct {
	Version   int     `json:"version"`
	Name      string  `json:"name"`
	ElapsedS  float64 `json:"elapsed_s"`
	IntervalS float64 `json:"interval_s"`
	Client    struct {
		CPUUserS       float64 `json:"cpu_user_s"`
		CPUCores       float64 `json:"cpu_cores"`
		MachineCores   int     `json:"machine_cores"`
		GeneratedBytes int64   `json:"generated_bytes"`
	} `json:"client"`
	Scenario struct {
		Tenants []struct {
			SecretKey string `json:"secret_key"`
		} `json:"tenants"`
	} `json:"scenario"`
	Tenants []struct {
		Name  string     `json:"name"`
		Total benchStats `json:"total"`
		Ops   []struct {
			Op      string       `json:"op"`
			Total   benchStats   `json:"total"`
			Seconds []benchStats `json:"seconds"`
		} `json:"ops"`
		Seconds    []benchStats `json:"seconds"`
		FirstError string       `json:"first_error"`
	} `json:"tenants"`
}

type benchStats struct {
	T         float64 `json:"t"`
	Ops       int64   `json:"ops"`
	Bytes     int64   `json:"bytes"`
	Errors    int64   `json:"errors"`
	Misses    int64   `json:"misses"`
	OpsPerSec float64 `json:"ops_per_s"`
	MBPerSec  float64 `json:"mb_per_s"`
	P50Ms     float64 `json:"p50_ms"`
	P90Ms     float64 `json:"p90_ms"`
	P99Ms     float64 `json:"p99_ms"`
	MaxMs     float64 `json:"max_ms"`
}

// A 10-second two-tenant scenario against a real facet serve, through
// `facet bench run`: the JSON report is complete and self-consistent, the
// plot is a PNG, and compare reads the report back.
func TestBenchRunTwoTenants(t *testing.T) {
	s := startServer(t, t.TempDir())
	c1 := s.createTenant(t, "bencha")
	c2 := s.createTenant(t, "benchb")
	dir := t.TempDir()
	scenario := `
name: e2e-two-tenants
duration: 10s
tenants:
  - name: writer
    endpoint: ` + s.endpoint() + `
    access_key_env: E2E_BENCH_AK1
    secret_key_env: E2E_BENCH_SK1
    bucket: e2e-bench-writer
    concurrency: 2
    mix: {put: 1}
    size: {dist: uniform, min: 16KiB, max: 64KiB}
    data: {kind: realistic, ratio: 3}
    keys: {count: 200}
  - name: reader
    endpoint: ` + s.endpoint() + `
    access_key_env: E2E_BENCH_AK2
    secret_key_env: E2E_BENCH_SK2
    bucket: e2e-bench-reader
    concurrency: 2
    rate: 50
    mix: {get: 8, head: 1, list: 1}
    size: {dist: fixed, size: 8KiB}
    keys: {count: 50, prepopulate: -1}
`
	scPath := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(scPath, []byte(scenario), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, facetBin, "bench", "run", "-f", scPath, "--out", out)
	cmd.Env = append(os.Environ(),
		"E2E_BENCH_AK1="+c1.AccessKey, "E2E_BENCH_SK1="+c1.SecretKey,
		"E2E_BENCH_AK2="+c2.AccessKey, "E2E_BENCH_SK2="+c2.SecretKey)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("facet bench run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("summary:\n%s", stdout.String())
	for _, secret := range []string{c1.SecretKey, c2.SecretKey} {
		if strings.Contains(stdout.String()+stderr.String(), secret) {
			t.Fatal("a secret key appears in the output")
		}
	}

	raw, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(c1.SecretKey)) || bytes.Contains(raw, []byte(c2.SecretKey)) {
		t.Fatal("result.json contains a secret key")
	}
	var rep benchReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Version != 1 || rep.Name != "e2e-two-tenants" || rep.IntervalS != 1 {
		t.Fatalf("header: version %d name %q interval %v", rep.Version, rep.Name, rep.IntervalS)
	}
	if rep.ElapsedS < 9.5 || rep.ElapsedS > 10.5 {
		t.Errorf("elapsed %.2fs, want the 10 s duration", rep.ElapsedS)
	}
	if len(rep.Tenants) != 2 || rep.Tenants[0].Name != "writer" || rep.Tenants[1].Name != "reader" {
		t.Fatalf("tenants: %+v", rep.Tenants)
	}
	if rep.Client.CPUUserS <= 0 || rep.Client.MachineCores < 1 || rep.Client.GeneratedBytes <= 0 {
		t.Errorf("client stats: %+v", rep.Client)
	}
	for _, tn := range rep.Tenants {
		if tn.FirstError != "" || tn.Total.Errors != 0 {
			t.Errorf("%s: %d errors, first: %s", tn.Name, tn.Total.Errors, tn.FirstError)
		}
		if tn.Total.Ops == 0 {
			t.Fatalf("%s did nothing", tn.Name)
		}
		if n := len(tn.Seconds); n != 10 {
			t.Errorf("%s: %d per-second entries, want 10", tn.Name, n)
		}
		var sumOps, sumBytes int64
		for i, sec := range tn.Seconds {
			sumOps += sec.Ops
			sumBytes += sec.Bytes
			if sec.T != float64(i) {
				t.Errorf("%s: second %d has t=%v", tn.Name, i, sec.T)
			}
		}
		if sumOps != tn.Total.Ops || sumBytes != tn.Total.Bytes {
			t.Errorf("%s: per-second sums %d ops %d bytes, totals %d and %d", tn.Name, sumOps, sumBytes, tn.Total.Ops, tn.Total.Bytes)
		}
		for _, op := range tn.Ops {
			st := op.Total
			if !(st.P50Ms > 0 && st.P50Ms <= st.P90Ms && st.P90Ms <= st.P99Ms && st.P99Ms <= st.MaxMs) {
				t.Errorf("%s %s: latency percentiles out of order: %+v", tn.Name, op.Op, st)
			}
			if want := float64(st.Ops) / rep.ElapsedS; math.Abs(st.OpsPerSec-want) > 1e-6*want+1e-9 {
				t.Errorf("%s %s: ops/s %.3f, ops/elapsed %.3f", tn.Name, op.Op, st.OpsPerSec, want)
			}
			if want := float64(st.Bytes) / 1e6 / rep.ElapsedS; math.Abs(st.MBPerSec-want) > 1e-6*want+1e-9 {
				t.Errorf("%s %s: MB/s %.3f, bytes/elapsed %.3f", tn.Name, op.Op, st.MBPerSec, want)
			}
		}
	}
	w := rep.Tenants[0]
	if len(w.Ops) != 1 || w.Ops[0].Op != "PUT" {
		t.Errorf("writer ops: %+v", w.Ops)
	}
	if avg := float64(w.Total.Bytes) / float64(w.Total.Ops); avg < 16<<10 || avg > 64<<10 {
		t.Errorf("writer's mean object %.0f bytes, outside its 16-64 KiB distribution", avg)
	}
	r := rep.Tenants[1]
	// Open loop at 50 ops/s for 10 s: about 500 ops, whatever the server's speed.
	if got := r.Total.Ops + r.Total.Misses; got < 400 || got > 520 {
		t.Errorf("reader at 50 ops/s for 10 s did %d ops", got)
	}
	for _, op := range r.Ops {
		if op.Op == "GET" && op.Total.Bytes != op.Total.Ops*8192 {
			t.Errorf("GET bytes %d for %d ops of 8 KiB", op.Total.Bytes, op.Total.Ops)
		}
	}

	f, err := os.Open(filepath.Join(out, "throughput.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("throughput.png: %v", err)
	}
	if sum, err := os.ReadFile(filepath.Join(out, "summary.txt")); err != nil || !strings.Contains(string(sum), "reader") {
		t.Errorf("summary.txt: %v\n%s", err, sum)
	}

	res := filepath.Join(out, "result.json")
	cmp, err := exec.CommandContext(ctx, facetBin, "bench", "compare", res, res).CombinedOutput()
	if err != nil {
		t.Fatalf("facet bench compare: %v\n%s", err, cmp)
	}
	if !strings.Contains(string(cmp), "1.00x") || !strings.Contains(string(cmp), "writer") {
		t.Errorf("compare of a report with itself:\n%s", cmp)
	}
}
