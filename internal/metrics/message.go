package metrics

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Bus subjects and messages; docs/bus.md describes them for programs in
// other languages. Every message is JSON with "v": 1; a reader refuses
// other versions rather than guess.
const (
	// SubjectNodePrefix + metric: one node's sample of one metric, once per
	// period (NodeSample).
	SubjectNodePrefix = "facet.metrics.node."
	// SubjectWatchPrefix + target kind ("tenant", "bucket", "object"): a
	// lease asking for a target's values (Watch). Nodes listen to object
	// watches only; aggregators to all.
	SubjectWatchPrefix = "facet.metrics.watch."
	// SubjectAggPrefix + metric: the merged values of every target, once
	// per period (Aggregate); + metric + "." + kind + "." + escaped path:
	// one watched target's value (TargetValue).
	SubjectAggPrefix = "facet.metric."
)

const msgVersion = 1

// NodeSample is one node's values of one metric over one period, on
// facet.metrics.node.<metric>. Targets that saw nothing are left out.
type NodeSample struct {
	V      int    `json:"v"`
	Node   string `json:"node"`
	Metric string `json:"metric"`
	// StartMs is the period's start, Unix milliseconds, aligned to the
	// period on every node; PeriodMs its length.
	StartMs  int64 `json:"start_ms"`
	PeriodMs int64 `json:"period_ms"`
	// Values maps a target ("tenant:t1", "bucket:t1/b1") to its value.
	Values map[string]float64 `json:"values"`
	// Weights holds, for "mean" metrics, how much each value counts.
	Weights map[string]float64 `json:"weights,omitempty"`
	// Merge says how to combine nodes for a metric the aggregator does
	// not know (custom metrics published by other programs); empty means
	// sum. Known metrics merge as registered.
	Merge Merge `json:"merge,omitempty"`
}

// Aggregate is a metric's merged values over one period, on
// facet.metric.<metric>: what a global controller reads.
type Aggregate struct {
	V        int                `json:"v"`
	Metric   string             `json:"metric"`
	StartMs  int64              `json:"start_ms"`
	PeriodMs int64              `json:"period_ms"`
	Nodes    int                `json:"nodes"`
	Values   map[string]float64 `json:"values"`
}

// TargetValue is one target's merged value over one period, on
// facet.metric.<metric>.<kind>.<escaped path>, published for watched
// targets every period, 0 included.
type TargetValue struct {
	V        int     `json:"v"`
	Metric   string  `json:"metric"`
	Target   string  `json:"target"`
	Value    float64 `json:"value"`
	StartMs  int64   `json:"start_ms"`
	PeriodMs int64   `json:"period_ms"`
	Nodes    int     `json:"nodes"`
}

// Watch asks, on facet.metrics.watch.<kind>, for a target's values until TTLMs
// from receipt: aggregators then publish its TargetValue every period, and
// nodes count object targets (which they do not otherwise). Send it again
// before it lapses.
type Watch struct {
	V      int    `json:"v"`
	Metric string `json:"metric"`
	Target string `json:"target"`
	TTLMs  int64  `json:"ttl_ms"`
}

var errVersion = errors.New("unsupported message version")

func decode(data []byte, v any, version func() int) error {
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	if got := version(); got != msgVersion {
		return fmt.Errorf("%w %d", errVersion, got)
	}
	return nil
}

func ms(t time.Time) int64 { return t.UnixMilli() }

// WatchSubject is the subject a watch of t is published on.
func WatchSubject(t Target) string { return SubjectWatchPrefix + string(t.Kind) }
