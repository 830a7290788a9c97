package controller_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/controller"
	"github.com/facet-sds/facet/internal/controller/controllertest"
)

func startSupervisor(t *testing.T, cfg controller.Config) *controller.Supervisor {
	t.Helper()
	s := controller.NewSupervisor(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("supervisor: %v", err)
		}
	})
	return s
}

// flaky panics on its first n runs, then serves until stopped.
type flaky struct {
	n       int32
	runs    atomic.Int32
	stopped chan struct{}
}

func (f *flaky) Serve(ctx context.Context) error {
	if f.runs.Add(1) <= f.n {
		panic("flaky controller")
	}
	<-ctx.Done()
	close(f.stopped)
	return ctx.Err()
}

func (f *flaky) Report() controller.Report { return controller.Report{Active: true, Reason: "serving"} }

func status(s *controller.Supervisor, id string) (controller.Status, bool) {
	for _, st := range s.Status() {
		if st.ID == id {
			return st, true
		}
	}
	return controller.Status{}, false
}

// countingObserver counts what an Observer hears.
type countingObserver struct {
	mu                        sync.Mutex
	started, restarts, remove map[string]int
}

func newCountingObserver() *countingObserver {
	return &countingObserver{started: map[string]int{}, restarts: map[string]int{}, remove: map[string]int{}}
}

func (o *countingObserver) ControllerStarted(id string) { o.mu.Lock(); o.started[id]++; o.mu.Unlock() }
func (o *countingObserver) ControllerRestarted(id string) {
	o.mu.Lock()
	o.restarts[id]++
	o.mu.Unlock()
}
func (o *countingObserver) ControllerRemoved(id string) { o.mu.Lock(); o.remove[id]++; o.mu.Unlock() }

func TestPanickingControllerIsRestartedAndCounted(t *testing.T) {
	obs := newCountingObserver()
	s := startSupervisor(t, controller.Config{FailureThreshold: 10, Observer: obs})
	f := &flaky{n: 2, stopped: make(chan struct{})}
	if err := s.Add("automation/p1", controller.KindAutomation, "p1", f); err != nil {
		t.Fatal(err)
	}
	controllertest.WaitFor(t, "third run", func() bool { return f.runs.Load() == 3 })
	st, ok := status(s, "automation/p1")
	if !ok || st.Restarts != 2 || st.State != controller.StateRunning || st.Kind != controller.KindAutomation || st.Policy != "p1" {
		t.Fatalf("status: %+v", st)
	}
	if !strings.Contains(st.LastFailure, "flaky controller") || !st.Active || st.Reason != "serving" {
		t.Fatalf("status misses the failure or the report: %+v", st)
	}
	if err := s.Add("automation/p1", controller.KindAutomation, "p1", f); !errors.Is(err, controller.ErrExists) {
		t.Fatalf("second add: %v", err)
	}
	if err := s.Remove("automation/p1"); err != nil {
		t.Fatal(err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.started["automation/p1"] != 1 || obs.restarts["automation/p1"] != 2 || obs.remove["automation/p1"] != 1 {
		t.Fatalf("observer heard %v %v %v", obs.started, obs.restarts, obs.remove)
	}
}

func TestFailingControllerBacksOffAlone(t *testing.T) {
	s := startSupervisor(t, controller.Config{FailureThreshold: 1, FailureBackoff: time.Hour})
	bad := &flaky{n: 1 << 30, stopped: make(chan struct{})}
	good := &flaky{stopped: make(chan struct{})}
	if err := s.Add("bad", controller.KindGlobal, "", bad); err != nil {
		t.Fatal(err)
	}
	if err := s.Add("good", controller.KindGlobal, "", good); err != nil {
		t.Fatal(err)
	}
	controllertest.WaitFor(t, "backoff", func() bool { st, _ := status(s, "bad"); return st.State == controller.StateBackoff })
	st, _ := status(s, "bad")
	if st.Restarts < 2 {
		t.Fatalf("backoff after %d failures, want more than the threshold", st.Restarts)
	}
	controllertest.WaitFor(t, "good running", func() bool { return good.runs.Load() == 1 })
	if st, _ := status(s, "good"); st.State != controller.StateRunning || st.Restarts != 0 {
		t.Fatalf("the healthy controller suffers from the other's backoff: %+v", st)
	}
	// A controller in backoff can still be removed.
	if err := s.Remove("bad"); err != nil {
		t.Fatal(err)
	}
}

func TestRemoveStopsTheController(t *testing.T) {
	s := startSupervisor(t, controller.Config{})
	f := &flaky{stopped: make(chan struct{})}
	if err := s.Add("c", controller.KindGlobal, "", f); err != nil {
		t.Fatal(err)
	}
	controllertest.WaitFor(t, "start", func() bool { return f.runs.Load() == 1 })
	if err := s.Remove("c"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.stopped:
	default:
		t.Fatal("Remove returned before the controller stopped")
	}
	if len(s.Status()) != 0 || len(s.IDs()) != 0 {
		t.Fatalf("removed controller still listed: %+v", s.Status())
	}
	if err := s.Remove("c"); !errors.Is(err, controller.ErrUnknown) {
		t.Fatalf("second remove: %v", err)
	}
	if f.runs.Load() != 1 {
		t.Fatalf("removed controller was restarted: %d runs", f.runs.Load())
	}
}

func TestAddedBeforeServeStartsWithIt(t *testing.T) {
	s := controller.NewSupervisor(controller.Config{})
	f := &flaky{stopped: make(chan struct{})}
	if err := s.Add("early", controller.KindGlobal, "", f); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	controllertest.WaitFor(t, "start", func() bool { return f.runs.Load() == 1 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-f.stopped
}
