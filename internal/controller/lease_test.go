package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/controller"
)

// funcController reconciles with f.
type funcController func(ctx context.Context) controller.Assignments

func (funcController) Name() string { return "fenced" }
func (f funcController) Reconcile(ctx context.Context, _ controller.MetricSnapshot, _ controller.Memory) (controller.Assignments, controller.Memory, error) {
	return f(ctx), nil, nil
}

// TestRunnerFencedByLease: a runner publishes only while its lease is
// held, under the lease's term; nothing once it is revoked, nothing
// computed in a period during which it was lost, and never the empty set
// a controller being stopped computes (issue 23: a deposed controller
// published an empty set that left every flow unlimited).
func TestRunnerFencedByLease(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	guard := controller.NewLeaseGuard(func() time.Time { return now })
	var during func(ctx context.Context)
	n := 0.0
	c := funcController(func(ctx context.Context) controller.Assignments {
		n++
		if during != nil {
			during(ctx)
		}
		if ctx.Err() != nil {
			return nil // what a stopped controller's failed reads leave
		}
		return controller.Assignments{{Target: "tenant:t1", Key: "get_bw", Value: n}}
	})
	pub := &fakePublisher{}
	r, err := controller.NewGlobalRunner(c, controller.GlobalConfig{Source: &fakeSource{}, Publisher: pub, Lease: guard})
	if err != nil {
		t.Fatal(err)
	}
	step := func(ctx context.Context, want int) {
		t.Helper()
		if err := r.Step(ctx); err != nil {
			t.Fatal(err)
		}
		if got := pub.count(); got != want {
			t.Fatalf("%d messages published; want %d", got, want)
		}
	}

	step(t.Context(), 0) // never granted
	guard.Grant(3, now.Add(2*time.Second))
	step(t.Context(), 1)
	if m := pub.last(); m.Term != 3 || len(m.Assignments) != 1 {
		t.Fatalf("published %+v; want term 3 and one assignment", m)
	}

	// Lost while the period ran: dropped.
	during = func(context.Context) { guard.Revoke() }
	step(t.Context(), 1)
	during = nil
	step(t.Context(), 1) // revoked

	// Re-granted under a newer term during the period: still dropped,
	// since the period began under another.
	guard.Grant(3, now.Add(2*time.Second))
	during = func(context.Context) { guard.Grant(4, now.Add(2*time.Second)) }
	step(t.Context(), 1)
	during = nil
	step(t.Context(), 2)
	if m := pub.last(); m.Term != 4 {
		t.Fatalf("term %d; want 4", m.Term)
	}

	// The deadline passes while the lease loop is stuck renewing.
	now = now.Add(3 * time.Second)
	step(t.Context(), 2)
	guard.Grant(4, now.Add(2*time.Second))

	// Stopped mid-period (the lease loop revokes, then cancels): the
	// empty set it computes is not published.
	ctx, cancel := context.WithCancel(t.Context())
	during = func(context.Context) { cancel() }
	if err := r.Step(ctx); err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	if got := pub.count(); got != 2 {
		t.Fatalf("a stopped controller published: %d messages", got)
	}
	for _, m := range pub.msgs {
		if len(m.Assignments) == 0 {
			t.Fatalf("an empty set was published: %+v", m)
		}
	}
}

// TestRunnerWithoutLease: without a Lease (the serve role) a runner
// publishes under term 0, which the message leaves out.
func TestRunnerWithoutLease(t *testing.T) {
	pub := &fakePublisher{}
	c := funcController(func(context.Context) controller.Assignments {
		return controller.Assignments{{Target: "tenant:t1", Key: "get_bw", Value: 1}}
	})
	r, err := controller.NewGlobalRunner(c, controller.GlobalConfig{Source: &fakeSource{}, Publisher: pub})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Step(t.Context()); err != nil || pub.count() != 1 || pub.last().Term != 0 {
		t.Fatalf("Step: %v, %d messages", err, pub.count())
	}
}
