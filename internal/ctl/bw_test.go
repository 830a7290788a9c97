package ctl

import (
	"context"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/meta"
)

// bwOnly is a QoS service with one view and no SLOs.
type bwOnly struct {
	admin.QoSService
	v admin.BWView
}

func (b bwOnly) Bandwidth(context.Context) (admin.BWView, error) { return b.v, nil }

// A flow capped in operations only showed "source none, asked 0" (issue
// 25): the table shows the ops cap, where it comes from, and the
// operations admitted, queued and refused.
func TestBWShowsTheOpsCap(t *testing.T) {
	v := admin.BWView{Nodes: []admin.BWNode{{Node: "gw-a", Stage: "gateway", Flows: []admin.BWFlow{
		{Tenant: "acme", Class: "get", Source: "none", OpsRate: 20, OpsSource: "assigned", Ops: 19.6, Queued: 12.5, Rejected: 3.25, InLine: 4},
		{Tenant: "zed", Class: "put", Source: "none", Ops: 7},
	}}}}
	e := newEnvWith(t, func(_ *meta.Store, c *admin.Config) { c.QoS = bwOnly{v: v} })
	out := mustOK(t, e.ctl(t, "bw"))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a header and two flows:\n%s", out)
	}
	for _, col := range []string{"OPS-CAP", "OPS/S", "QUEUED/S", "SLOWDOWN/S"} {
		if !strings.Contains(lines[0], col) {
			t.Errorf("header lacks %s: %s", col, lines[0])
		}
	}
	for _, cell := range []string{"20.0/s assigned", "19.6", "12.5", "3.2"} {
		if !strings.Contains(lines[1], cell) {
			t.Errorf("acme's row lacks %q: %s", cell, lines[1])
		}
	}
	if f := strings.Fields(lines[2]); !strings.Contains(lines[2], " - ") || f[len(f)-3] != "7.0" {
		t.Errorf("zed's row (no cap): %s", lines[2])
	}
	js := mustOK(t, e.ctl(t, "bw", "-o", "json"))
	for _, k := range []string{`"ops_rate":20`, `"ops_source":"assigned"`, `"queued":12.5`, `"in_line":4`} {
		if !strings.Contains(js, k) {
			t.Errorf("JSON lacks %s:\n%s", k, js)
		}
	}
}
