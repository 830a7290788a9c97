package policy

import (
	"strings"
	"testing"
)

// CONTEXT names a request class: it parses, prints back, checks only with
// bandwidth SLOs, and compiles into records apart from the tenant's own.
func TestContextClause(t *testing.T) {
	text := `FOR TENANT t1 CONTEXT compaction DO SET bandwidth WITH limit=20MB/s, reservation=5MB/s
FOR TENANT t1 DO SET bandwidth WITH limit=100MB/s
FOR ALL TENANTS CONTEXT flush DO SET bandwidth WITH limit=1MB/s`
	ps, err := ParseAndCheck("p", text, testVocab())
	if err != nil {
		t.Fatal(err)
	}
	if ps[0].Context != "compaction" || ps[1].Context != "" || ps[2].Context != "flush" {
		t.Fatalf("contexts %q %q %q", ps[0].Context, ps[1].Context, ps[2].Context)
	}
	s := ps[0].String()
	if !strings.Contains(s, "FOR TENANT t1 CONTEXT compaction DO SET bandwidth") {
		t.Fatalf("rendering %q", s)
	}
	again, err := Parse("again", s)
	if err != nil || again[0].String() != s {
		t.Fatalf("%q re-parses to %v %v", s, again, err)
	}
	c, err := Compile(ps, nil)
	if err != nil {
		t.Fatal(err)
	}
	tab := c.Static()
	if slo, ok := tab.SLO(SLOBandwidth, "t1"); !ok || slo.Context != "" || slo.Params["limit"] != "100000000" {
		t.Fatalf("tenant SLO %+v %v", slo, ok)
	}
	if slo, ok := tab.ContextSLO(SLOBandwidth, "t1", "compaction"); !ok || slo.Params["limit"] != "20000000" || slo.Params["reservation"] != "5000000" {
		t.Fatalf("compaction SLO %+v %v", slo, ok)
	}
	if slo, ok := tab.ContextSLO(SLOBandwidth, "t2", "flush"); !ok || slo.Params["limit"] != "1000000" {
		t.Fatalf("flush SLO for every tenant %+v %v", slo, ok)
	}
	if _, ok := tab.ContextSLO(SLOBandwidth, "t1", "other"); ok {
		t.Fatal("a class no policy names has no SLO")
	}
	if _, ok := tab.SLO(SLOBandwidth, "t2"); ok {
		t.Fatal("a CONTEXT record must not become the tenant's SLO")
	}

	for text, msg := range map[string]string{
		"FOR TENANT t1 CONTEXT compaction DO SET compression":                "only SET/DELETE bandwidth apply to one",
		"FOR TENANT t1 CONTEXT Compaction DO SET bandwidth WITH limit=1MB/s": `request class "Compaction"`,
		"FOR TENANT t1 CONTEXT DO SET bandwidth WITH limit=1MB/s":            "expected a request class",
	} {
		_, err := ParseAndCheck("p", text, testVocab())
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", text, err, msg)
		}
	}
}
