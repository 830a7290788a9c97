package admin

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"
)

type fakeWorkload struct {
	period time.Time
	values map[string]map[string]float64 // metric, target
}

func (f fakeWorkload) Metrics(context.Context) ([]MetricInfo, error) {
	return []MetricInfo{{Name: "put_ops", Unit: "count/s", Doc: "object writes per second", Merge: "sum"}}, nil
}

func (f fakeWorkload) MetricValues(_ context.Context, metric, target string) (MetricValues, error) {
	vals, ok := f.values[metric]
	if !ok {
		return MetricValues{}, fmt.Errorf("metric %s: %w", metric, ErrUnknownMetric)
	}
	if target == "nonsense" {
		return MetricValues{}, fmt.Errorf("target %q: want tenant:T: %w", target, ErrInvalidInput)
	}
	out := MetricValues{Metric: metric, Unit: "count/s", Period: &f.period, PeriodSeconds: 1, Nodes: 2}
	for t, v := range vals {
		if target == "" || t == target {
			out.Values = append(out.Values, MetricValue{Target: t, Value: v})
		}
	}
	if target != "" && len(out.Values) == 0 {
		out.Values = []MetricValue{{Target: target}}
	}
	return out, nil
}

func TestMetricRoutes(t *testing.T) {
	f := newFixture(t)
	wantError(t, f.do(t, "GET", "/v1/metrics", ""), http.StatusNotImplemented, "NotImplemented")
	wantError(t, f.do(t, "GET", "/v1/metrics/put_ops", ""), http.StatusNotImplemented, "NotImplemented")

	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.h = New(Config{Store: f.store, Token: token, Workload: fakeWorkload{period: at, values: map[string]map[string]float64{
		"put_ops": {"tenant:t1": 4, "tenant:t2": 9},
	}}})
	var ml MetricList
	r := f.do(t, "GET", "/v1/metrics", "")
	decodeStrict(t, r.body, &ml)
	if r.status != http.StatusOK || len(ml.Metrics) != 1 || ml.Metrics[0].Name != "put_ops" || ml.Metrics[0].Merge != "sum" {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	var mv MetricValues
	r = f.do(t, "GET", "/api/v1/metrics/put_ops?target="+url.QueryEscape("tenant:t1"), "")
	decodeStrict(t, r.body, &mv)
	if r.status != http.StatusOK || len(mv.Values) != 1 || mv.Values[0] != (MetricValue{"tenant:t1", 4}) || !mv.Period.Equal(at) || mv.Nodes != 2 {
		t.Fatalf("one target: %d %s", r.status, r.body)
	}
	r = f.do(t, "GET", "/v1/metrics/put_ops", "")
	mv = MetricValues{}
	decodeStrict(t, r.body, &mv)
	if r.status != http.StatusOK || len(mv.Values) != 2 {
		t.Fatalf("all targets: %d %s", r.status, r.body)
	}
	wantError(t, f.do(t, "GET", "/v1/metrics/put_opz", ""), http.StatusNotFound, "NoSuchMetric")
	wantError(t, f.do(t, "GET", "/v1/metrics/put_ops?target=nonsense", ""), http.StatusBadRequest, "InvalidArgument")
}
