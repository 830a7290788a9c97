package control

import (
	"testing"
	"time"
)

// otherValue stands for internal/metrics's value type.
type otherValue struct {
	Metric, Target string
	Value          float64
	Period         time.Time
	Nodes          int
}

type otherFeed struct {
	fn      func(otherValue)
	healthy bool
}

func (o *otherFeed) Subscribe(metric, target string, fn func(otherValue)) (func(), error) {
	o.fn = fn
	return func() { o.fn = nil }, nil
}

func TestFeedOf(t *testing.T) {
	o := &otherFeed{healthy: true}
	f := FeedOf(o.Subscribe, func() bool { return o.healthy })
	var got Value
	cancel, err := f.Subscribe("put_ops", "tenant:t1", func(v Value) { got = v })
	if err != nil {
		t.Fatal(err)
	}
	o.fn(otherValue{Metric: "put_ops", Target: "tenant:t1", Value: 4.2, Nodes: 2})
	if got.Value != 4.2 || got.Nodes != 2 || got.Target != "tenant:t1" {
		t.Fatalf("got %+v", got)
	}
	h := f.(FeedHealth)
	if !h.Healthy() {
		t.Fatal("unhealthy")
	}
	o.healthy = false
	if h.Healthy() {
		t.Fatal("health not passed through")
	}
	cancel()
	if o.fn != nil {
		t.Fatal("cancel not passed through")
	}
	if !FeedOf(o.Subscribe, nil).(FeedHealth).Healthy() {
		t.Fatal("no health func: want healthy")
	}
}
