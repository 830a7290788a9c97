package control

import (
	"time"
)

// Feed delivers workload-metric values to controllers, per metric and per
// target, once per metric period (the observer pattern of seeds/000
// §6.5): a controller following tenant t1 never receives t2's values.
// internal/metrics's aggregator implements it.
type Feed interface {
	// Subscribe calls fn with every new value of metric for target, until
	// cancel is called. target is "tenant:T", "bucket:T/B" or
	// "object:T/B/K" (TargetTenant...). fn must not block: it is called on
	// the feed's goroutine.
	Subscribe(metric string, target string, fn func(Value)) (cancel func(), err error)
}

// FeedHealth is implemented by a Feed that can tell whether it is
// receiving values (its bus connection is up). While it is not,
// controllers hold their decisions instead of reading the silence as an
// idle workload.
type FeedHealth interface {
	Healthy() bool
}

// Value is one metric value for one target, merged across nodes.
type Value struct {
	Metric, Target string
	Value          float64
	// Period is the start of the period the value measures.
	Period time.Time
	// Nodes is how many nodes contributed.
	Nodes int
}

// TargetTenant, TargetBucket and TargetObject name a Feed target.
func TargetTenant(tenant string) string         { return "tenant:" + tenant }
func TargetBucket(tenant, bucket string) string { return "bucket:" + tenant + "/" + bucket }
func TargetObject(tenant, bucket, key string) string {
	return "object:" + tenant + "/" + bucket + "/" + key
}

// FeedOf adapts the Subscribe method of a feed with a value type of its
// own, of Value's shape (internal/metrics's Aggregator), to Feed, without
// this package importing it: control.FeedOf(agg.Subscribe, agg.Healthy).
// healthy may be nil.
func FeedOf[V ~struct {
	Metric, Target string
	Value          float64
	Period         time.Time
	Nodes          int
}](subscribe func(metric, target string, fn func(V)) (func(), error), healthy func() bool) Feed {
	return adaptedFeed[V]{subscribe: subscribe, healthy: healthy}
}

type adaptedFeed[V ~struct {
	Metric, Target string
	Value          float64
	Period         time.Time
	Nodes          int
}] struct {
	subscribe func(metric, target string, fn func(V)) (func(), error)
	healthy   func() bool
}

func (f adaptedFeed[V]) Subscribe(metric, target string, fn func(Value)) (func(), error) {
	return f.subscribe(metric, target, func(v V) { fn(Value(v)) })
}

func (f adaptedFeed[V]) Healthy() bool { return f.healthy == nil || f.healthy() }
