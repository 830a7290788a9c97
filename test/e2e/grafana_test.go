package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// The shipped Grafana dashboards ask only for metrics a running server
// exposes, and show every family it exposes: after a short workload that
// touches each part that exports one (S3 requests, a cached GET, a failing
// WASM filter, a volume's reads and writes), every metric name in a panel's
// query is in /metrics, and every facet_ family in /metrics is in a query.
func TestGrafanaMetricsExist(t *testing.T) {
	if gatewayTarget() {
		t.Skip("the workload needs facet serve's block stage and data directory")
	}
	// With an audit log, so that its metrics (facet_audit_*) are exposed.
	s := startBlockServerWith(t, t.TempDir(), "e2e-admin-"+randHex(16), "--nbd-allow-plain-loopback",
		"--audit-log", filepath.Join(t.TempDir(), "audit.log"))
	c := s.createPlainTenant(t, "acme") // its volume is written in plain NBD below
	cli := s.sdk(c)

	// Requests, a cached GET (the second one), a policy and its filter.
	mkBucket(t, cli, "www")
	s.mustCtl(t, "policy", "add", "FOR BUCKET acme/www DO SET caching")
	putBytes(t, cli, "www", "index.html", bytes.Repeat([]byte("<p>hello</p>\n"), 100))
	for i := 0; i < 2; i++ {
		getBytes(t, cli, "www", "index.html")
	}
	// A damaged stored byte: the GET fails and counts in
	// facet_integrity_failures_total.
	mkBucket(t, cli, "dmg")
	damaged := seededBytes(4096, 9)
	putBytes(t, cli, "dmg", "x", damaged)
	flipStored(t, filepath.Join(s.dataDir, "objects"), damaged, 10)
	if _, err := readAllOf(cli, "dmg", "x", ""); err == nil {
		t.Fatal("a damaged object was served")
	}
	// A sandboxed filter that traps: its PUT fails with FilterFailed.
	s.mustCtl(t, "filter", "create", "trapper", "--wasm", wasmModule(t, "hostile"), "--methods", "PUT", "--stages", "gateway",
		"--param", "mode:string:trap")
	mkBucket(t, cli, "trap")
	s.mustCtl(t, "policy", "add", "FOR BUCKET acme/trap DO SET trapper")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("trap"), Key: aws.String("x"), Body: strings.NewReader("x")}); err == nil {
		t.Fatal("a PUT through a trapping filter succeeded")
	}
	// A PUT over the tenant's objects quota (index.html is its one object).
	s.mustCtl(t, "quota", "set", "acme", "--objects", "1")
	if _, err := cli.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("www"), Key: aws.String("second"), Body: strings.NewReader("x")}); err == nil {
		t.Fatal("a PUT over the objects quota succeeded")
	}
	// A volume's writes and reads over NBD.
	s.mustCtl(t, "volume", "create", "vm1", "--tenant", "acme", "--size", "64MiB")
	run(t, "qemu-io", "-f", "raw", "-c", "write -P 0x5a 0 1M", "-c", "read -P 0x5a 0 1M", s.uri("vm1"))

	// The block stage's rates are of the last second: wait for one.
	time.Sleep(1200 * time.Millisecond)
	exposed := exposedFamilies(s.metricsText(t))

	files, err := filepath.Glob(filepath.Join("..", "..", "deploy", "grafana", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboard under deploy/grafana: %v", err)
	}
	queried := map[string]bool{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d any
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, expr := range dashboardExprs(d) {
			for _, m := range metricNameRE.FindAllString(expr, -1) {
				queried[m] = true
				if !exposed.has(m) {
					t.Errorf("%s queries %s, which /metrics does not expose after the workload (query: %s)", filepath.Base(f), m, expr)
				}
			}
		}
	}
	var unshown []string
	for fam := range exposed.families {
		if !exposed.shownBy(fam, queried) {
			unshown = append(unshown, fam)
		}
	}
	sort.Strings(unshown)
	if len(unshown) > 0 {
		t.Errorf("/metrics exposes families no dashboard panel shows: %v", unshown)
	}
}

var metricNameRE = regexp.MustCompile(`\bfacet_[a-z0-9_]+`)

// dashboardExprs returns every "expr" string of a dashboard, rows' nested
// panels included.
func dashboardExprs(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "expr" {
				out = append(out, s)
				continue
			}
			out = append(out, dashboardExprs(x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, dashboardExprs(x)...)
		}
	}
	return out
}

// metricFamilies are the facet_ families of a Prometheus text exposition,
// with their types, and the names of the samples seen.
type metricFamilies struct {
	families map[string]string // name -> type
	samples  map[string]bool
}

func exposedFamilies(text string) metricFamilies {
	m := metricFamilies{families: map[string]string{}, samples: map[string]bool{}}
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" && strings.HasPrefix(f[2], "facet_") {
			m.families[f[2]] = f[3]
			continue
		}
		if strings.HasPrefix(line, "facet_") {
			name := line
			if i := strings.IndexAny(name, "{ "); i >= 0 {
				name = name[:i]
			}
			m.samples[name] = true
		}
	}
	return m
}

// has says whether a name a query uses is a sample name /metrics shows.
func (m metricFamilies) has(name string) bool { return m.samples[name] }

// shownBy says whether a family is in a query: by its name or, for a
// histogram or summary, by one of its series' names.
func (m metricFamilies) shownBy(fam string, queried map[string]bool) bool {
	if !m.samplesOf(fam) {
		return true // a family without a sample yet: nothing to show
	}
	for _, suffix := range []string{"", "_bucket", "_count", "_sum"} {
		if queried[fam+suffix] {
			return true
		}
	}
	return false
}

func (m metricFamilies) samplesOf(fam string) bool {
	for _, suffix := range []string{"", "_bucket", "_count", "_sum"} {
		if m.samples[fam+suffix] {
			return true
		}
	}
	return false
}
