package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// MetricsSource reports workload metrics: the registry policies are
// checked against, and the latest values merged across nodes.
// internal/metrics's Aggregator implements it (internal/server adapts).
type MetricsSource interface {
	// Metrics lists the registered metrics, in name order.
	Metrics(ctx context.Context) ([]MetricInfo, error)
	// MetricValues returns a metric's values over the last merged period:
	// of target alone when it is given ("tenant:t1", "bucket:t1/b1",
	// "object:t1/b1/key"; 0 when it saw nothing), else of every target
	// that had a value. Errors wrapping ErrUnknownMetric are answered 404,
	// those wrapping ErrInvalidInput 400, with their message.
	MetricValues(ctx context.Context, metric, target string) (MetricValues, error)
}

// ErrUnknownMetric marks a MetricsSource error for a metric that is not
// registered.
var ErrUnknownMetric = errors.New("unknown metric")

// MetricInfo describes a workload metric (GET /metrics lists them).
type MetricInfo struct {
	Name string `json:"name"`
	// Unit is the DSL's kind of value: count/s, bytes/s, duration
	// (seconds), ratio, count, bytes.
	Unit string `json:"unit"`
	Doc  string `json:"doc"`
	// Merge is how nodes' values combine: sum, max or mean.
	Merge string `json:"merge"`
}

// MetricList is the body of GET /metrics.
type MetricList struct {
	Metrics []MetricInfo `json:"metrics"`
}

// MetricValues is the body of GET /metrics/{metric}.
type MetricValues struct {
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
	// Period is the start of the period the values measure; absent until
	// the first period is merged.
	Period        *time.Time `json:"period,omitempty"`
	PeriodSeconds float64    `json:"period_seconds"`
	// Nodes is how many nodes' samples were merged.
	Nodes  int           `json:"nodes"`
	Values []MetricValue `json:"values"`
}

// MetricValue is one target's value.
type MetricValue struct {
	Target string  `json:"target"`
	Value  float64 `json:"value"`
}

func (h *handler) listMetrics(w http.ResponseWriter, r *http.Request) error {
	if h.workload == nil {
		return apiErr(http.StatusNotImplemented, "NotImplemented", "this server does not collect workload metrics")
	}
	ms, err := h.workload.Metrics(r.Context())
	if err != nil {
		return err
	}
	if ms == nil {
		ms = []MetricInfo{}
	}
	writeJSON(w, http.StatusOK, MetricList{Metrics: ms})
	return nil
}

func (h *handler) getMetric(w http.ResponseWriter, r *http.Request) error {
	if h.workload == nil {
		return apiErr(http.StatusNotImplemented, "NotImplemented", "this server does not collect workload metrics")
	}
	name := r.PathValue("metric")
	v, err := h.workload.MetricValues(r.Context(), name, r.URL.Query().Get("target"))
	switch {
	case errors.Is(err, ErrUnknownMetric):
		return apiErr(http.StatusNotFound, "NoSuchMetric", fmt.Sprintf("metric %q is not registered", name))
	case errors.Is(err, ErrInvalidInput):
		return apiErr(http.StatusBadRequest, "InvalidArgument", err.Error())
	case err != nil:
		return err
	}
	if v.Values == nil {
		v.Values = []MetricValue{}
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}
