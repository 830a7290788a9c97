package e2e

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/facet-sds/facet/clients/go/facetctx"
)

// A class's SLO set with `facet ctl slo set TENANT --class NAME` (no
// policy) takes effect: the class's bytes are served at no more than its
// limit (a token bucket's bound, which holds on any machine) and not
// absurdly less (a wide band), while a class without an SLO stays
// unlimited; `slo list` shows it as an API record. A CONTEXT policy for
// the same class does not displace the API record (the rule of tenant
// records over SET bandwidth policies); unsetting the record gives the
// policy's limit back. Malformed classes and negative rates are refused
// with messages that say what is wrong.
func TestClassSLOThroughCtl(t *testing.T) {
	s := startServer(t, t.TempDir())
	c := s.createTenant(t, "cs1")
	const lim = 2_000_000
	if out, err := s.ctl(t, "slo", "set", "cs1", "--class", "compaction", "--limit", "2MB/s"); err != nil ||
		!strings.Contains(string(out), "cs1 CONTEXT compaction") {
		t.Fatalf("slo set --class: %v %s", err, out)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--class", "Compaction!", "--limit", "2MB/s"}, `InvalidClassName`},
		{[]string{"--class", "compaction", "--limit", "-5MB/s"}, `limit="-5MB/s": must not be negative`},
		{[]string{"--class", "compaction", "--background", "5MB/s"}, `a request class has no background work`},
		{[]string{"--class", "compaction", "--get", "5MB/s", "--limit", "20MB/s"}, `give its guaranteed rate as reservation`},
	} {
		out, err := s.ctl(t, append([]string{"slo", "set", "cs1"}, bad.args...)...)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("slo set cs1 %v: %v %s, want an error with %s", bad.args, err, out, bad.want)
		}
	}

	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	putOne(t, s, c, "csb", "obj", body)
	cl := s.sdk(c, facetctx.Option)
	took := getAll(t, cl, &facetctx.Block{Workflow: "e2e", Class: "compaction"}, "csb", "obj")
	getAll(t, cl, &facetctx.Block{Workflow: "e2e", Class: "scan"}, "csb", "obj")
	rate := float64(len(body)) / took.Seconds()
	t.Logf("compaction: %d bytes in %v = %.2f MB/s (limit 2 MB/s)", len(body), took, rate/1e6)
	// Bound: rate × time plus the buckets' bursts (class stage and QoS
	// limiter, 64 KiB each); band below: a quarter of the limit.
	if max := lim*took.Seconds() + 2*64<<10 + 0.05*lim; float64(len(body)) > max {
		t.Errorf("compaction read %d bytes in %v: over its %d B/s limit", len(body), took, lim)
	}
	if rate < lim/4 {
		t.Errorf("compaction served %.2f MB/s, far under its 2 MB/s limit", rate/1e6)
	}
	flows := contextFlows(t, s)
	if f := flows["cs1/compaction"]; f.Rate != lim || f.Served < int64(len(body)) {
		t.Errorf("flow cs1/compaction: %+v, want rate %d", f, lim)
	}
	if f := flows["cs1/scan"]; !f.Unlimited || f.Served < int64(len(body)) {
		t.Errorf("flow cs1/scan (no SLO): %+v, want unlimited", f)
	}
	// The QoS limiter runs the class as a flow of its own (ctx:), at
	// most at the record's limit (the controller may assign less).
	for deadline := time.Now().Add(20 * time.Second); ; {
		bw, err := s.ctl(t, "bw", "-o", "json")
		var view struct {
			Nodes []struct {
				Flows []struct {
					Tenant, Class string
					Asked         float64
				}
			}
		}
		if err == nil && json.Unmarshal(bw, &view) == nil && func() bool {
			for _, n := range view.Nodes {
				for _, f := range n.Flows {
					if f.Tenant == "cs1" && f.Class == "ctx:compaction" {
						if f.Asked <= 0 || f.Asked > lim*1.001 {
							t.Fatalf("limiter flow cs1/ctx:compaction asks %.0f B/s, want at most %d", f.Asked, lim)
						}
						return true
					}
				}
			}
			return false
		}() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no limiter flow cs1/ctx:compaction in facet ctl bw: %v %s", err, bw)
		}
		time.Sleep(300 * time.Millisecond)
	}
	out, err := s.ctl(t, "slo", "list", "-o", "json")
	if err != nil || !strings.Contains(string(out), `"tenant":"cs1","class":"compaction","source":"api"`) ||
		!strings.Contains(string(out), `"limit":2000000`) {
		t.Fatalf("slo list: %v %s", err, out)
	}

	// A CONTEXT policy for the class: the API record stays in force.
	s.policyAdd(t, "FOR TENANT cs1 CONTEXT compaction DO SET bandwidth WITH limit=50MB/s")
	out, err = s.ctl(t, "slo", "get", "cs1", "--class", "compaction", "-o", "json")
	if err != nil || !strings.Contains(string(out), `"source":"api"`) || !strings.Contains(string(out), `"limit":2000000`) {
		t.Fatalf("slo get --class with a policy too: %v %s", err, out)
	}
	if out, err := s.ctl(t, "slo", "list", "-o", "json"); err != nil || strings.Count(string(out), `"class":"compaction"`) != 1 {
		t.Fatalf("slo list lists the class once, as in force: %v %s", err, out)
	}
	// ...and in force: a class-stage period (1 s) later the flow still
	// runs at the record's 2 MB/s, not the policy's 50.
	time.Sleep(1500 * time.Millisecond)
	getAll(t, cl, &facetctx.Block{Workflow: "e2e", Class: "compaction"}, "csb", "obj")
	if f := contextFlows(t, s)["cs1/compaction"]; f.Rate != lim {
		t.Fatalf("flow cs1/compaction with a CONTEXT policy too: %+v, want the API record's %d", f, lim)
	}
	// Unset: the policy's SLO governs the class again.
	if out, err := s.ctl(t, "slo", "unset", "cs1", "--class", "compaction"); err != nil {
		t.Fatalf("slo unset --class: %v %s", err, out)
	}
	out, err = s.ctl(t, "slo", "get", "cs1", "--class", "compaction", "-o", "json")
	if err != nil || !strings.Contains(string(out), `"source":"policy"`) || !strings.Contains(string(out), `"limit":50000000`) {
		t.Fatalf("slo get --class after unset: %v %s", err, out)
	}
	if out, err := s.ctl(t, "slo", "delete", "cs1", "--class", "compaction"); err == nil || !strings.Contains(err.Error(), "NoSuchSLO") {
		t.Fatalf("second delete: %v %s", err, out)
	}
	// The class stage takes the policy's limit at its next period.
	for deadline := time.Now().Add(30 * time.Second); ; {
		getAll(t, cl, &facetctx.Block{Workflow: "e2e", Class: "compaction"}, "csb", "obj")
		f := contextFlows(t, s)["cs1/compaction"]
		if f.Rate == 50e6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("flow cs1/compaction after unset: %+v, want the policy's 50 MB/s", f)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
