package control

import (
	"context"
	"testing"
)

// A CONTEXT bandwidth record is its class's: it is found by
// ContextBandwidth and is neither the tenant's SLO nor listed with them.
func TestContextBandwidth(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, _, err := f.svc.Apply(ctx, "FOR TENANT t1 CONTEXT compaction DO SET bandwidth WITH limit=20MB/s\nFOR TENANT t1 DO SET bandwidth WITH limit=100MB/s"); err != nil {
		t.Fatal(err)
	}
	if p, ok := f.svc.ContextBandwidth("t1", "compaction"); !ok || p["limit"] != "20000000" {
		t.Fatalf("class record %v %v", p, ok)
	}
	if _, ok := f.svc.ContextBandwidth("t1", "flush"); ok {
		t.Fatal("no policy names flush")
	}
	if p, ok := f.svc.BandwidthSLO("t1"); !ok || p["limit"] != "100000000" {
		t.Fatalf("tenant SLO %v %v", p, ok)
	}
	for _, s := range f.svc.BandwidthSLOs() {
		if s.Context != "" {
			t.Fatalf("a class record listed with the tenants' SLOs: %+v", s)
		}
	}
	if n := len(f.svc.BandwidthSLOs()); n != 1 {
		t.Fatalf("%d tenant SLO records, want 1", n)
	}
}
