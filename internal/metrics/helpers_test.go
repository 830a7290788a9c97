package metrics

import (
	"bytes"
	"context"
	"io"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/bus"
	"github.com/facet-sds/facet/internal/obs"
)

// t0 is a period boundary; tests flush at t0+k seconds.
var t0 = time.Unix(1_700_000_000, 0)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// newTestCollector runs the given modules and publishes nothing.
func newTestCollector(mods ...Module) *Collector {
	return NewCollector(CollectorConfig{Node: "n1", Registry: NewRegistry(mods...)})
}

// req is a routed request's observation.
func req(op, tenant, bucket, key string) *obs.Observation {
	return &obs.Observation{Op: op, Tenant: tenant, Bucket: bucket, Key: key, Start: time.Now(), Status: 200}
}

// serve runs o through c as s3api does: Started, the payload (if any)
// read through Body, Done.
func serve(t testing.TB, c *Collector, o *obs.Observation, payload []byte) {
	t.Helper()
	o.Routed = true
	c.Started(o)
	if payload != nil {
		n, err := io.Copy(io.Discard, c.Body(o, bytes.NewReader(payload)))
		if err != nil {
			t.Fatal(err)
		}
		o.BytesIn = n
	}
	c.Done(o)
}

// flush ends a period and returns the samples by metric.
func flush(c *Collector, now time.Time) map[string]NodeSample {
	out := map[string]NodeSample{}
	for _, s := range c.Flush(now) {
		out[s.Metric] = s
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// approx allows for the six significant digits samples keep.
func approx(a, b float64) bool { return math.Abs(a-b) <= 1e-5*math.Max(1, math.Abs(b)) }

// wantValues checks a sample's values exactly (targets absent from want
// must be absent from the sample).
func wantValues(t *testing.T, s NodeSample, want map[string]float64) {
	t.Helper()
	if len(s.Values) != len(want) {
		t.Fatalf("%s: values %v, want %v", s.Metric, s.Values, want)
	}
	for k, v := range want {
		if got, ok := s.Values[k]; !ok || !near(got, v) {
			t.Fatalf("%s: values %v, want %v", s.Metric, s.Values, want)
		}
	}
}

// memBus is an in-memory bus.Bus delivering synchronously, for tests that
// do not need NATS.
type memBus struct {
	mu   sync.Mutex
	subs map[int]memSub
	next int
	msgs []memMsg
}

type memSub struct {
	pattern string
	fn      func(string, []byte)
}

type memMsg struct {
	subject string
	data    []byte
}

func newMemBus() *memBus { return &memBus{subs: map[int]memSub{}} }

func (b *memBus) Publish(subject string, data []byte) error {
	if err := bus.CheckSubject(subject); err != nil {
		return err
	}
	b.mu.Lock()
	b.msgs = append(b.msgs, memMsg{subject, bytes.Clone(data)})
	var fns []func(string, []byte)
	for _, s := range b.subs {
		if bus.Match(s.pattern, subject) {
			fns = append(fns, s.fn)
		}
	}
	b.mu.Unlock()
	for _, fn := range fns {
		fn(subject, data)
	}
	return nil
}

func (b *memBus) Subscribe(pattern string, fn func(string, []byte)) (bus.Subscription, error) {
	if err := bus.CheckPattern(pattern); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next++
	id := b.next
	b.subs[id] = memSub{pattern, fn}
	return memUnsub(func() error {
		b.mu.Lock()
		delete(b.subs, id)
		b.mu.Unlock()
		return nil
	}), nil
}

func (b *memBus) Close() error { return nil }

func (b *memBus) nsubs() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// published returns the messages published on subjects matching pattern.
func (b *memBus) published(pattern string) []memMsg {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []memMsg
	for _, m := range b.msgs {
		if bus.Match(pattern, m.subject) {
			out = append(out, m)
		}
	}
	return out
}

type memUnsub func() error

func (f memUnsub) Unsubscribe() error { return f() }

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}
