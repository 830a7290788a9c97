package controller_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/bus"
	"github.com/facet-sds/facet/internal/controller"
	"github.com/facet-sds/facet/internal/controller/controllertest"
)

// fakeBus delivers what the test publishes to the one subscription.
type fakeBus struct {
	mu      sync.Mutex
	pattern string
	fn      func(string, []byte)
}

func (b *fakeBus) Subscribe(pattern string, fn func(string, []byte)) (bus.Subscription, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pattern, b.fn = pattern, fn
	return b, nil
}

func (b *fakeBus) Unsubscribe() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fn = nil
	return nil
}

func (b *fakeBus) subscribed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fn != nil
}

func (b *fakeBus) beat(t *testing.T, hb controller.Heartbeat) {
	t.Helper()
	data, err := json.Marshal(hb)
	if err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	fn := b.fn
	b.mu.Unlock()
	fn(controller.HeartbeatSubject(hb.Controller), data)
}

// TestExternalHeartbeats: an out-of-process controller is listed by its
// heartbeats, with its instance and when it was last heard, flagged when
// it competes with a built-in controller of its name, and dropped after
// MissedHeartbeats of its interval; malformed heartbeats list nothing.
func TestExternalHeartbeats(t *testing.T) {
	clock := controllertest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	fb := &fakeBus{}
	s := startSupervisor(t, controller.Config{Heartbeats: fb, Clock: clock})
	if err := s.Add("bandwidth", controller.KindGlobal, "", &flaky{stopped: make(chan struct{})}); err != nil {
		t.Fatal(err)
	}
	controllertest.WaitFor(t, "heartbeat subscription", fb.subscribed)
	if fb.pattern != controller.HeartbeatPattern || controller.HeartbeatSubject("x") != "facet.controller.x.heartbeat" {
		t.Fatalf("subscribed to %q", fb.pattern)
	}
	fb.beat(t, controller.Heartbeat{V: 1, Controller: "equalshare", Instance: "I1", IntervalMs: 2000, Status: "2 tenants"})
	fb.beat(t, controller.Heartbeat{V: 1, Controller: "bandwidth", Instance: "I2"})
	fb.beat(t, controller.Heartbeat{V: 2, Controller: "future", Instance: "I3"})
	fb.beat(t, controller.Heartbeat{V: 1, Controller: "Bad Name", Instance: "I4"})
	ext := func() map[string]controller.Status {
		out := map[string]controller.Status{}
		for _, st := range s.Status() {
			if st.Kind == controller.KindExternal {
				out[st.ID] = st
			}
		}
		return out
	}
	got := ext()
	if len(got) != 2 {
		t.Fatalf("externals: %+v", got)
	}
	es := got["external/equalshare"]
	if es.State != controller.StateRunning || es.Instance != "I1" || !es.LastSeen.Equal(clock.Now()) ||
		!strings.Contains(es.Reason, "heartbeat every 2s from instance I1; 2 tenants") || strings.Contains(es.Reason, "competes") {
		t.Errorf("equalshare: %+v", es)
	}
	if bw := got["external/bandwidth"]; !strings.Contains(bw.Reason, "competes with the built-in controller bandwidth: start the server with --disable-controller bandwidth") {
		t.Errorf("bandwidth: %+v", bw)
	}
	// bandwidth beats every 1 s (the default): gone after 3 s of silence;
	// equalshare every 2 s: still listed until 6 s.
	clock.Advance(3500 * time.Millisecond)
	if got := ext(); len(got) != 1 || got["external/equalshare"].ID == "" {
		t.Fatalf("after 3.5 s: %+v", got)
	}
	fb.beat(t, controller.Heartbeat{V: 1, Controller: "equalshare", Instance: "I5", IntervalMs: 2000})
	clock.Advance(5 * time.Second)
	if got := ext(); got["external/equalshare"].Instance != "I5" {
		t.Fatalf("a new instance's heartbeat: %+v", got)
	}
	clock.Advance(1500 * time.Millisecond)
	if got := ext(); len(got) != 0 {
		t.Fatalf("after three missed heartbeats: %+v", got)
	}
}

// TestDisabledControllers: a disabled name keeps the controller of that
// id, the ones under it and a supervised service of that name from
// running, and lists them as disabled.
func TestDisabledControllers(t *testing.T) {
	s := startSupervisor(t, controller.Config{Disabled: []string{"bandwidth", "automation"}})
	bw := &flaky{stopped: make(chan struct{})}
	other := &flaky{stopped: make(chan struct{})}
	auto := &flaky{stopped: make(chan struct{})}
	for id, svc := range map[string]*flaky{"bandwidth": bw, "bandwidth2": other, "automation/p1": auto} {
		kind := controller.KindGlobal
		if strings.HasPrefix(id, "automation/") {
			kind = controller.KindAutomation
		}
		if err := s.Add(id, kind, "", svc); err != nil {
			t.Fatal(err)
		}
	}
	reconciler := &flaky{stopped: make(chan struct{})}
	s.Supervise("automation", reconciler)
	controllertest.WaitFor(t, "bandwidth2 running", func() bool { return other.runs.Load() == 1 })
	time.Sleep(50 * time.Millisecond) // what would start has started
	if bw.runs.Load() != 0 || auto.runs.Load() != 0 || reconciler.runs.Load() != 0 {
		t.Fatalf("disabled controllers ran: bandwidth %d, automation/p1 %d, automation %d", bw.runs.Load(), auto.runs.Load(), reconciler.runs.Load())
	}
	want := map[string]string{"automation": "automation", "automation/p1": "automation", "bandwidth": "bandwidth"}
	for id, by := range want {
		st, ok := status(s, id)
		if !ok || st.State != controller.StateDisabled || st.Reason != "disabled by --disable-controller "+by {
			t.Errorf("%s: %+v %v", id, st, ok)
		}
	}
	if st, _ := status(s, "bandwidth2"); st.State != controller.StateRunning {
		t.Errorf("bandwidth2: %+v", st)
	}
	if ids := s.IDs(); strings.Join(ids, ",") != "bandwidth2" {
		t.Errorf("IDs lists what runs: %v", ids)
	}
}
