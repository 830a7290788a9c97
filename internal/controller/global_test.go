package controller_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/controller"
	"github.com/facet-sds/facet/internal/controller/controllertest"
)

type fakeSource struct {
	mu   sync.Mutex
	snap controller.MetricSnapshot
	err  error
}

func (f *fakeSource) set(samples ...controller.Sample) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snap = controller.MetricSnapshot{Samples: samples}
}

func (f *fakeSource) Snapshot(context.Context) (controller.MetricSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snap, f.err
}

type fakePublisher struct {
	mu   sync.Mutex
	msgs []controller.AssignmentMessage
	subj []string
	err  error
}

func (p *fakePublisher) Publish(subject string, data []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	var m controller.AssignmentMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	p.msgs = append(p.msgs, m)
	p.subj = append(p.subj, subject)
	return nil
}

func (p *fakePublisher) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.msgs)
}

func (p *fakePublisher) last() controller.AssignmentMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.msgs[len(p.msgs)-1]
}

func demand(metric, target string, v float64) controller.Sample {
	return controller.Sample{Metric: metric, Target: target, Value: v}
}

func TestEqualShare(t *testing.T) {
	es := &controller.EqualShare{ControllerName: "share", Metric: "put_bw", Key: "put_bw_limit", Capacity: 90}
	as, _, err := es.Reconcile(t.Context(), controller.MetricSnapshot{Samples: []controller.Sample{
		demand("put_bw", "tenant:t1", 10), demand("put_bw", "tenant:t2", 0), demand("put_bw", "tenant:t3", 5),
		demand("get_bw", "tenant:t4", 5),
		{Metric: "put_bw", Target: "tenant:t5", Node: "n1", Value: 7}, // per-node samples are not demand of their own
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := controller.Assignments{{Target: "tenant:t1", Key: "put_bw_limit", Value: 45}, {Target: "tenant:t3", Key: "put_bw_limit", Value: 45}}
	if len(as) != len(want) || as[0] != want[0] || as[1] != want[1] {
		t.Fatalf("assignments %+v, want %+v", as, want)
	}
	if _, _, err := (&controller.EqualShare{ControllerName: "x"}).Reconcile(t.Context(), controller.MetricSnapshot{}, nil); err == nil {
		t.Fatal("no capacity accepted")
	}
}

func TestGlobalRunnerPublishesOnlyChanges(t *testing.T) {
	src, pub := &fakeSource{}, &fakePublisher{}
	clock := controllertest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	r, err := controller.NewGlobalRunner(&controller.EqualShare{ControllerName: "share", Metric: "put_bw", Key: "limit", Capacity: 100},
		controller.GlobalConfig{Source: src, Publisher: pub, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	src.set(demand("put_bw", "tenant:t1", 1))
	step := func() {
		t.Helper()
		if err := r.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	step()
	if pub.count() != 1 || pub.subj[0] != "facet.controller.share.assignments" {
		t.Fatalf("first period: %d messages on %v", pub.count(), pub.subj)
	}
	m := pub.last()
	if m.V != 1 || m.Controller != "share" || m.Seq != 1 || m.Instance == "" || len(m.Assignments) != 1 || m.Assignments[0].Value != 100 {
		t.Fatalf("message: %+v", m)
	}
	step()                                    // same snapshot, same assignments
	src.set(demand("put_bw", "tenant:t1", 7)) // more demand, same share
	step()
	if pub.count() != 1 {
		t.Fatalf("unchanged assignments published again: %d messages", pub.count())
	}
	src.set(demand("put_bw", "tenant:t2", 3), demand("put_bw", "tenant:t1", 7))
	step()
	m = pub.last()
	if pub.count() != 2 || m.Seq != 2 || len(m.Assignments) != 2 || m.Assignments[0].Target != "tenant:t1" || m.Assignments[1].Value != 50 {
		t.Fatalf("after a change: %d messages, last %+v", pub.count(), m)
	}

	// A failed publication is retried on the next period.
	pub.err = errors.New("bus down")
	src.set(demand("put_bw", "tenant:t3", 3))
	if err := r.Step(ctx); err == nil {
		t.Fatal("publish error not returned")
	}
	if rep := r.Report(); rep.LastError == "" || !rep.Active {
		t.Fatalf("report after a failed period: %+v", rep)
	}
	pub.err = nil
	step()
	if m := pub.last(); pub.count() != 3 || m.Seq != 3 || m.Assignments[0].Target != "tenant:t3" {
		t.Fatalf("after the bus came back: %d messages, last %+v", pub.count(), m)
	}
	rep := r.Report()
	if rep.LastError != "" || !rep.LastEval.Equal(clock.Now()) || len(rep.Values) != 1 || rep.Values[0].Target != "tenant:t3" {
		t.Fatalf("report: %+v", rep)
	}

	// A snapshot or a reconcile that fails publishes nothing.
	src.err = errors.New("no snapshot")
	if err := r.Step(ctx); err == nil || pub.count() != 3 {
		t.Fatalf("failed snapshot: %v, %d messages", err, pub.count())
	}
}

func TestGlobalRunnerUnderSupervisor(t *testing.T) {
	src, pub := &fakeSource{}, &fakePublisher{}
	src.set(demand("put_bw", "tenant:t1", 1))
	clock := controllertest.NewClock(time.Unix(0, 0))
	r, err := controller.NewGlobalRunner(&controller.EqualShare{ControllerName: "share", Metric: "put_bw", Key: "limit", Capacity: 10},
		controller.GlobalConfig{Source: src, Publisher: pub, Clock: clock, Period: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sup := controller.NewSupervisor(controller.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	if err := sup.Add("global/share", controller.KindGlobal, "", r); err != nil {
		t.Fatal(err)
	}
	controllertest.WaitFor(t, "publication", func() bool { return pub.count() == 1 && clock.Tickers() == 1 })
	src.set(demand("put_bw", "tenant:t1", 1), demand("put_bw", "tenant:t2", 1))
	clock.Advance(time.Second)
	controllertest.WaitFor(t, "publication", func() bool { return pub.count() == 2 })
	st := sup.Status()
	if len(st) != 1 || st[0].Kind != controller.KindGlobal || !st[0].Active || st[0].State != controller.StateRunning {
		t.Fatalf("status: %+v", st)
	}
}

func TestGlobalRunnerChecksItsConfig(t *testing.T) {
	src, pub := &fakeSource{}, &fakePublisher{}
	if _, err := controller.NewGlobalRunner(&controller.EqualShare{ControllerName: "Bad Name"}, controller.GlobalConfig{Source: src, Publisher: pub}); err == nil {
		t.Fatal("bad name accepted")
	}
	if _, err := controller.NewGlobalRunner(&controller.EqualShare{ControllerName: "ok"}, controller.GlobalConfig{Source: src}); err == nil {
		t.Fatal("no publisher accepted")
	}
}
