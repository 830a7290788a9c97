package controller

import (
	"context"
	"errors"
)

// EqualShare is the smallest useful global controller, an example of the
// interface: it divides Capacity equally among the targets that show
// demand (Metric > 0) and assigns each its share under Key. The QoS
// model's bandwidth controller refines this with reservations, limits,
// weights and per-node placement.
type EqualShare struct {
	ControllerName string
	// Metric is the demand, such as "put_bw"; Key the assigned value's
	// name, such as "put_bw_limit".
	Metric, Key string
	Capacity    float64
}

// Name implements GlobalController.
func (e *EqualShare) Name() string { return e.ControllerName }

// Reconcile implements GlobalController.
func (e *EqualShare) Reconcile(_ context.Context, snap MetricSnapshot, _ Memory) (Assignments, Memory, error) {
	if e.Capacity <= 0 {
		return nil, nil, errors.New("equal share: capacity must be positive")
	}
	var busy []string
	for _, t := range snap.Targets(e.Metric) {
		if v, _ := snap.Value(e.Metric, t); v > 0 {
			busy = append(busy, t)
		}
	}
	out := make(Assignments, 0, len(busy))
	for _, t := range busy {
		out = append(out, Assignment{Target: t, Key: e.Key, Value: e.Capacity / float64(len(busy))})
	}
	return out, nil, nil
}
