package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

type fakeQoS struct{ slos map[string]SLO }

func (f *fakeQoS) ListSLOs(context.Context) ([]SLO, error) {
	out := []SLO{}
	for _, s := range f.slos {
		out = append(out, s)
	}
	return out, nil
}

// fakeQoS keeps SLOs by "tenant" or "tenant/class".
func fakeKey(t, class string) string {
	if class == "" {
		return t
	}
	return t + "/" + class
}

func (f *fakeQoS) GetSLO(_ context.Context, t, class string) (SLO, error) {
	s, ok := f.slos[fakeKey(t, class)]
	if !ok {
		return SLO{}, ErrNoSuchSLO
	}
	return s, nil
}

func (f *fakeQoS) PutSLO(_ context.Context, t, class string, spec SLOSpec) (SLO, error) {
	v, ok := spec["get"].(string)
	if !ok || v != "30MB/s" {
		return SLO{}, fmt.Errorf("%w: get: want 30MB/s in this fake", ErrInvalidSLO)
	}
	f.slos[fakeKey(t, class)] = SLO{Tenant: t, Class: class, Source: "api", Get: 30e6}
	return f.slos[fakeKey(t, class)], nil
}

func (f *fakeQoS) DeleteSLO(_ context.Context, t, class string) error {
	if _, ok := f.slos[fakeKey(t, class)]; !ok {
		return ErrNoSuchSLO
	}
	delete(f.slos, fakeKey(t, class))
	return nil
}

func (f *fakeQoS) Bandwidth(context.Context) (BWView, error) {
	return BWView{Algorithm: "crystal", Nodes: []BWNode{{Node: "gw-a", Flows: []BWFlow{{Tenant: "t1", Class: "get", Asked: 1e6}}}}}, nil
}

func TestSLORoutes(t *testing.T) {
	f := newFixture(t)
	if r := f.do(t, http.MethodGet, "/v1/slos", ""); r.status != http.StatusNotImplemented {
		t.Fatalf("without QoS: %d", r.status)
	}
	f.h = New(Config{Store: f.store, Token: token, QoS: &fakeQoS{slos: map[string]SLO{}}})
	if r := f.do(t, http.MethodPut, "/v1/slos/t1", `{"get":"30MB/s"}`); r.status != http.StatusOK || !strings.Contains(string(r.body), `"get": 30000000`) {
		t.Fatalf("put: %d %s", r.status, r.body)
	}
	if r := f.do(t, http.MethodPut, "/v1/slos/t1", `{"get":"30 parsecs"}`); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "InvalidSLO") {
		t.Fatalf("bad put: %d %s", r.status, r.body)
	}
	if r := f.do(t, http.MethodPut, "/v1/slos/t1", `{"get":`); r.status != http.StatusBadRequest {
		t.Fatalf("malformed put: %d", r.status)
	}
	if r := f.do(t, http.MethodGet, "/v1/slos/t1", ""); r.status != http.StatusOK {
		t.Fatalf("get: %d", r.status)
	}
	if r := f.do(t, http.MethodGet, "/v1/slos", ""); r.status != http.StatusOK || !strings.Contains(string(r.body), `"tenant": "t1"`) {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	if r := f.do(t, http.MethodDelete, "/v1/slos/t1", ""); r.status != http.StatusNoContent {
		t.Fatalf("delete: %d", r.status)
	}
	if r := f.do(t, http.MethodGet, "/v1/slos/t1", ""); r.status != http.StatusNotFound || !strings.Contains(string(r.body), "NoSuchSLO") {
		t.Fatalf("get deleted: %d %s", r.status, r.body)
	}
	var v BWView
	r := f.do(t, http.MethodGet, "/v1/bw/osinfo", "")
	if err := json.Unmarshal(r.body, &v); err != nil || len(v.Nodes) != 1 || v.Nodes[0].Flows != nil {
		t.Fatalf("osinfo keeps flows: %s", r.body)
	}
	if r := f.do(t, http.MethodGet, "/v1/bw", ""); !strings.Contains(string(r.body), `"tenant": "t1"`) {
		t.Fatalf("bw: %s", r.body)
	}
	if r := f.do(t, http.MethodGet, "/v1/bw/nodes/gw-a", ""); r.status != http.StatusOK {
		t.Fatalf("bw node: %d", r.status)
	}
	if r := f.do(t, http.MethodGet, "/v1/bw/nodes/nope", ""); r.status != http.StatusNotFound {
		t.Fatalf("bw unknown node: %d", r.status)
	}
	if r := f.do(t, http.MethodGet, "/v1/bw", "", "Authorization", ""); r.status != http.StatusUnauthorized {
		t.Fatalf("no token: %d", r.status)
	}
}

// ?class= addresses the SLO of a tenant's request class, apart from the
// tenant's own; a malformed class is a 400 that names it, never the
// tenant's SLO by mistake.
func TestClassSLORoutes(t *testing.T) {
	f := newFixture(t)
	q := &fakeQoS{slos: map[string]SLO{}}
	f.h = New(Config{Store: f.store, Token: token, QoS: q})
	if r := f.do(t, http.MethodPut, "/v1/slos/t1?class=compaction", `{"get":"30MB/s"}`); r.status != http.StatusOK ||
		!strings.Contains(string(r.body), `"class": "compaction"`) {
		t.Fatalf("put class: %d %s", r.status, r.body)
	}
	if _, ok := q.slos["t1"]; ok {
		t.Fatal("a class's SLO was stored as the tenant's")
	}
	if r := f.do(t, http.MethodGet, "/v1/slos/t1", ""); r.status != http.StatusNotFound || !strings.Contains(string(r.body), `tenant \"t1\" has no SLO"`) {
		t.Fatalf("tenant's SLO after a class's put: %d %s", r.status, r.body)
	}
	if r := f.do(t, http.MethodGet, "/v1/slos/t1?class=compaction", ""); r.status != http.StatusOK || !strings.Contains(string(r.body), `"class": "compaction"`) {
		t.Fatalf("get class: %d %s", r.status, r.body)
	}
	if r := f.do(t, http.MethodGet, "/v1/slos/t1?class=flush", ""); r.status != http.StatusNotFound ||
		!strings.Contains(string(r.body), `no SLO for class \"flush\"`) {
		t.Fatalf("get unset class: %d %s", r.status, r.body)
	}
	for _, bad := range []string{"class=", "class=Compaction", "class=-x", "class=a%2Fb", "class=" + strings.Repeat("c", 64), "class=a&class=b"} {
		for _, m := range []string{http.MethodPut, http.MethodGet, http.MethodDelete} {
			r := f.do(t, m, "/v1/slos/t1?"+bad, `{"get":"30MB/s"}`)
			if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "InvalidClassName") {
				t.Errorf("%s ?%s: %d %s", m, bad, r.status, r.body)
			}
		}
	}
	if r := f.do(t, http.MethodGet, "/v1/slos/t1?class=Compaction", ""); !strings.Contains(string(r.body), `invalid request class \"Compaction\": want 1-63 characters`) {
		t.Errorf("bad class message: %s", r.body)
	}
	if r := f.do(t, http.MethodPut, "/v1/slos/t1?class=compaction", `{"get":"-5MB/s"}`); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "InvalidSLO") {
		t.Fatalf("bad class put: %d %s", r.status, r.body)
	}
	if r := f.do(t, http.MethodDelete, "/v1/slos/t1?class=compaction", ""); r.status != http.StatusNoContent {
		t.Fatalf("delete class: %d %s", r.status, r.body)
	}
	if r := f.do(t, http.MethodDelete, "/v1/slos/t1?class=compaction", ""); r.status != http.StatusNotFound {
		t.Fatalf("delete class twice: %d %s", r.status, r.body)
	}
}
