package promexp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/obs"
)

const dashboardPath = "../../deploy/grafana/facet.json"

type dashboard struct {
	Title      string `json:"title"`
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int    `json:"id"`
		Type       string `json:"type"`
		Title      string `json:"title"`
		Datasource *struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		GridPos struct{ H, W, X, Y int } `json:"gridPos"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// exportedFamilies returns the names of the facet_ families an Exporter
// exposes once each has a series.
func exportedFamilies(t *testing.T) map[string]bool {
	e := New(Config{Policies: version(1)})
	o := &obs.Observation{Routed: true, Op: "PutObject", Tenant: "t", Status: 200, BytesIn: 1, BytesOut: 1, Duration: time.Millisecond}
	e.Started(o)
	e.Done(o)
	e.Step("noop", filter.StageGateway, filter.MethodPut).Add(time.Millisecond, 1)
	e.ControllerStarted("c")
	fams, err := e.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "facet_") {
			out[f.GetName()] = true
		}
	}
	return out
}

// exporterFamily says whether a metric name is in the Exporter's own
// namespaces (requests, filters, throttling, controllers, policies).
func exporterFamily(name string) bool {
	for _, p := range []string{"facet_s3_", "facet_active_", "facet_filter_seconds", "facet_filter_bytes", "facet_throttled_", "facet_controller_", "facet_policy_table"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

var (
	metricRef   = regexp.MustCompile(`\bfacet_[a-z0-9_]+`)
	variableRef = regexp.MustCompile(`\$\{?([A-Za-z_]+)`)
)

// The shipped Grafana dashboard is valid JSON, shows every Facet family,
// asks only for families that exist, and uses only variables it defines.
func TestGrafanaDashboard(t *testing.T) {
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard without title, uid or panels")
	}
	vars := map[string]bool{"__rate_interval": true, "__interval": true, "__range": true}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	exported := exportedFamilies(t)
	shown := map[string]bool{}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W <= 0 || p.GridPos.X+p.GridPos.W > 24 || p.GridPos.H <= 0 {
			t.Errorf("panel %q: grid position %+v", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 || p.Datasource == nil {
			t.Errorf("panel %q has no query or data source", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" {
				t.Errorf("panel %q: empty query", p.Title)
			}
			for _, m := range metricRef.FindAllString(tg.Expr, -1) {
				fam := m
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					if base := strings.TrimSuffix(m, suffix); base != m && exported[base] {
						fam = base
					}
				}
				// Families of other packages (the metadata store, the
				// bus, the object cache, volumes, the WASM runtime) are
				// checked against a running server's /metrics by
				// TestGrafanaMetricsExist in test/e2e; an Exporter family
				// is checked here.
				if !exported[fam] && exporterFamily(m) {
					t.Errorf("panel %q queries %s, which Facet does not export", p.Title, m)
				}
				shown[fam] = true
			}
			for _, v := range variableRef.FindAllStringSubmatch(tg.Expr, -1) {
				if !vars[v[1]] {
					t.Errorf("panel %q uses undefined variable $%s", p.Title, v[1])
				}
			}
		}
	}
	for fam := range exported {
		if !shown[fam] {
			t.Errorf("no panel shows %s", fam)
		}
	}
}

// Every query of the dashboard parses as PromQL: promtool checks them as
// recording rules, with Grafana's variables substituted.
func TestGrafanaQueriesParse(t *testing.T) {
	bin := promtool(t)
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	subst := strings.NewReplacer("$__rate_interval", "1m", "$__interval", "15s", "$__range", "1h", "$instance", ".*", "$tenant", ".*")
	var rules bytes.Buffer
	rules.WriteString("groups:\n- name: dashboard\n  rules:\n")
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			expr, _ := json.Marshal(subst.Replace(tg.Expr)) // a JSON string is a YAML string
			fmt.Fprintf(&rules, "  - record: dashboard:panel%d_%s\n    expr: %s\n", p.ID, strings.ToLower(tg.RefID), expr)
		}
	}
	path := filepath.Join(t.TempDir(), "dashboard.rules.yml")
	if err := os.WriteFile(path, rules.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), bin, "check", "rules", path).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s\n%s", err, out, rules.String())
	}
}

// promtool returns the path of Prometheus' promtool. It is installed by
// scripts/ensure-deps.sh for `make test`; FACET_SKIP_PROMTOOL=1 skips the
// tests that need it where it cannot be.
func promtool(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("FACET_SKIP_PROMTOOL") == "1" {
			t.Skip("promtool not installed and FACET_SKIP_PROMTOOL=1")
		}
		t.Fatal("promtool not found (scripts/ensure-deps.sh installs it; FACET_SKIP_PROMTOOL=1 skips this test)")
	}
	return bin
}
