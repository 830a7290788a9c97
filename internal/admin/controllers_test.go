package admin

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

type fakeControllers struct {
	list []ControllerStatus
	err  error
}

func (f fakeControllers) Controllers(context.Context) ([]ControllerStatus, error) {
	return f.list, f.err
}

func TestControllerRoute(t *testing.T) {
	f := newFixture(t)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	src := fakeControllers{list: []ControllerStatus{{
		ID: "automation/p1", Kind: "automation", Policy: "p1", State: "running", Active: true, Restarts: 2,
		LastFailure: "panic: boom", LastEvaluation: &at, Targets: []string{"tenant:t1"},
		Values: []ControllerValue{{Target: "tenant:t1", Metric: "put_ops", Value: 4.2, Period: at}},
		Reason: "put_ops=4.2 > 3 on tenant:t1",
	}}}
	f.h = New(Config{Store: f.store, Token: token, Controllers: src})
	r := f.do(t, "GET", "/v1/controllers", "")
	var cl ControllerList
	decodeStrict(t, r.body, &cl)
	if r.status != http.StatusOK || len(cl.Controllers) != 1 {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	c := cl.Controllers[0]
	if c.ID != "automation/p1" || c.Restarts != 2 || !c.Active || c.LastEvaluation == nil || !c.LastEvaluation.Equal(at) ||
		len(c.Values) != 1 || c.Values[0].Value != 4.2 {
		t.Fatalf("controller: %+v", c)
	}

	f.h = New(Config{Store: f.store, Token: token, Controllers: fakeControllers{}})
	if r := f.do(t, "GET", "/api/v1/controllers", ""); r.status != http.StatusOK || string(r.body) != "{\n  \"controllers\": []\n}\n" {
		t.Fatalf("empty list: %d %q", r.status, r.body)
	}
	f.h = New(Config{Store: f.store, Token: token, Controllers: fakeControllers{err: errors.New("boom")}})
	wantError(t, f.do(t, "GET", "/v1/controllers", ""), http.StatusInternalServerError, "InternalError")
}
