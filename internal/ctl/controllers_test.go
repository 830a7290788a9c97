package ctl

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/meta"
)

type controllersFake struct{}

func (controllersFake) Controllers(context.Context) ([]admin.ControllerStatus, error) {
	at := time.Date(2026, 1, 2, 2, 31, 5, 0, time.UTC)
	return []admin.ControllerStatus{
		{ID: "automation/p1", Kind: "automation", Policy: "p1", State: "running", Active: true, Restarts: 1, LastEvaluation: &at,
			Targets: []string{"tenant:t1"}, Values: []admin.ControllerValue{{Target: "tenant:t1", Metric: "put_ops", Value: 4.2, Period: at}},
			Reason: "put_ops=4.2 > 3 on tenant:t1 at 2026-01-02T02:31:05Z"},
		{ID: "global/share", Kind: "global", State: "backoff", Restarts: 5},
		{ID: "external/bandwidth", Kind: "external", State: "running", Active: true, Instance: "I1", LastSeen: &at,
			Reason: "heartbeat every 1s from instance I1"},
	}, nil
}

func TestControllerList(t *testing.T) {
	e := newEnvWith(t, func(_ *meta.Store, cfg *admin.Config) { cfg.Controllers = controllersFake{} })
	l := lines(mustOK(t, e.ctl(t, "controller", "list")))
	if len(l) != 4 || !strings.HasPrefix(l[0], "ID") ||
		strings.Join(strings.Fields(l[1]), " ") != "automation/p1 automation p1 running true 1 2026-01-02T02:31:05Z tenant:t1 put_ops=4.2 put_ops=4.2 > 3 on tenant:t1 at 2026-01-02T02:31:05Z" ||
		strings.Join(strings.Fields(l[2]), " ") != "global/share global - backoff false 5 - - -" ||
		strings.Join(strings.Fields(l[3]), " ") != "external/bandwidth external - running true 0 seen 2026-01-02T02:31:05Z - heartbeat every 1s from instance I1" {
		t.Fatalf("controller list: %q", l)
	}
	var cl admin.ControllerList
	decodeOne(t, mustOK(t, e.ctl(t, "controller", "list", "-o", "json")), &cl)
	if len(cl.Controllers) != 3 || cl.Controllers[0].Values[0].Value != 4.2 || cl.Controllers[2].Instance != "I1" || cl.Controllers[2].LastSeen == nil {
		t.Fatalf("-o json: %+v", cl)
	}
	if r := newEnv(t).ctl(t, "controller", "list"); r.err == nil || !strings.Contains(r.stderr, "NotImplemented") {
		t.Fatalf("without controllers: %v %q", r.err, r.stderr)
	}
}
