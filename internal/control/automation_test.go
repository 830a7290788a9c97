package control

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/controller"
	"github.com/facet-sds/facet/internal/controller/controllertest"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/filter/builtin"
	"github.com/facet-sds/facet/internal/meta"
)

// fakeFeed routes values by metric and target, as the aggregator does.
type fakeFeed struct {
	mu     sync.Mutex
	subs   map[int]fakeSub
	nextID int
	// panics makes that many Subscribe calls panic.
	panics atomic.Int32
}

type fakeSub struct {
	metric, target string
	fn             func(Value)
}

func newFakeFeed() *fakeFeed { return &fakeFeed{subs: map[int]fakeSub{}} }

func (f *fakeFeed) Subscribe(metric, target string, fn func(Value)) (func(), error) {
	if f.panics.Add(-1) >= 0 {
		panic("feed exploded")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.nextID
	f.nextID++
	f.subs[id] = fakeSub{metric, target, fn}
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs, id)
	}, nil
}

// publish delivers a value to the subscribers of its metric and target
// and returns how many there were.
func (f *fakeFeed) publish(metric, target string, v float64) int {
	f.mu.Lock()
	var fns []func(Value)
	for _, s := range f.subs {
		if s.metric == metric && s.target == target {
			fns = append(fns, s.fn)
		}
	}
	f.mu.Unlock()
	for _, fn := range fns {
		fn(Value{Metric: metric, Target: target, Value: v, Period: time.Now(), Nodes: 1})
	}
	return len(fns)
}

func (f *fakeFeed) subscribed(metric, target string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.subs {
		if s.metric == metric && s.target == target {
			return true
		}
	}
	return false
}

func (f *fakeFeed) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

type automationFixture struct {
	*fixture
	feed  *fakeFeed
	clock *controllertest.Clock
	sup   *controller.Supervisor
	auto  *Automation
}

func newAutomationFixture(t *testing.T) *automationFixture {
	t.Helper()
	f := &automationFixture{fixture: newFixture(t)}
	f.feed, f.clock, f.sup, f.auto = startAutomation(t, f.svc)
	return f
}

// startAutomation runs a supervisor until the test ends and returns the
// automation controllers of svc on a fake feed and clock.
func startAutomation(t *testing.T, svc *Service) (*fakeFeed, *controllertest.Clock, *controller.Supervisor, *Automation) {
	t.Helper()
	feed, clock := newFakeFeed(), controllertest.NewClock(t0)
	sup := controller.NewSupervisor(controller.Config{FailureBackoff: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	auto, err := NewAutomation(svc, AutomationConfig{Feed: feed, Supervisor: sup, Clock: clock, Period: period})
	if err != nil {
		t.Fatal(err)
	}
	return feed, clock, sup, auto
}

func (f *automationFixture) sync(t *testing.T) {
	t.Helper()
	if err := f.auto.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (f *automationFixture) status(t *testing.T, id string) controller.Status {
	t.Helper()
	for _, st := range f.sup.Status() {
		if st.ID == id {
			return st
		}
	}
	t.Fatalf("no controller %s in %v", id, f.sup.IDs())
	return controller.Status{}
}

// putFilters lists the filters of the PUT pipeline of t1/docs/k.
func (f *fixture) putFilters(tenant string) []string {
	var out []string
	for _, s := range f.svc.ForPut(&filter.Request{Tenant: tenant, Bucket: "docs", Key: "k", Size: 10, Header: map[string]string{}}).Steps {
		out = append(out, s.Filter.Info().Name)
	}
	return out
}

func (f *fixture) stored(t *testing.T, id string) meta.Policy {
	t.Helper()
	p, err := f.store.GetPolicy(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func policyID(t *testing.T, f *fixture) string {
	t.Helper()
	ps, err := f.store.ListPolicies(context.Background())
	if err != nil || len(ps) == 0 {
		t.Fatalf("policies: %v %v", ps, err)
	}
	return ps[len(ps)-1].ID
}

func TestActivationSwitchesTheTableAndIsRecorded(t *testing.T) {
	f := newAutomationFixture(t)
	ctx := context.Background()
	if _, _, err := f.store.CreateTenantWithKey(ctx, "t2"); err != nil {
		t.Fatal(err)
	}
	f.apply(t, "FOR TENANT t1 WHEN put_ops > 3 DO SET compression")
	id := policyID(t, f.fixture)
	if p := f.stored(t, id); p.State != meta.PolicyPending || !strings.Contains(p.Reason, "waiting for its trigger") {
		t.Fatalf("new dynamic policy stored as %s %q", p.State, p.Reason)
	}
	f.sync(t)
	controllertest.WaitFor(t, "subscription", func() bool { return f.feed.subscribed("put_ops", "tenant:t1") })
	if f.feed.subscribed("put_ops", "tenant:t2") {
		t.Fatal("the controller of a T1 policy follows T2")
	}
	f.feed.publish("put_ops", "tenant:t1", 2)
	if got := f.putFilters("t1"); len(got) != 0 {
		t.Fatalf("active below the threshold: %v", got)
	}
	f.feed.publish("put_ops", "tenant:t1", 4.2)
	controllertest.WaitFor(t, "activation", func() bool { return len(f.putFilters("t1")) == 1 })
	if got := f.putFilters("t1"); got[0] != "compression" {
		t.Fatalf("PUT pipeline %v", got)
	}
	if got := f.putFilters("t2"); len(got) != 0 {
		t.Fatalf("T2's pipeline changed: %v", got)
	}
	// The table switches first, the store follows.
	controllertest.WaitFor(t, "recorded", func() bool { return f.stored(t, id).State == meta.PolicyActive })
	p := f.stored(t, id)
	if !strings.HasPrefix(p.Reason, "put_ops=4.2 > 3 on tenant:t1 at ") {
		t.Fatalf("stored state %s %q", p.State, p.Reason)
	}
	st := f.status(t, automationID(id))
	if !st.Active || st.Kind != controller.KindAutomation || st.Policy != id || st.State != controller.StateRunning ||
		len(st.Values) != 1 || st.Values[0].Value != 4.2 || st.LastEval.IsZero() {
		t.Fatalf("status %+v", st)
	}
	// The admin view of it.
	cs, _ := ControllerSource(f.sup).Controllers(ctx)
	if len(cs) != 1 || cs[0].ID != "automation/"+id || !cs[0].Active || cs[0].LastEvaluation == nil || len(cs[0].Targets) != 1 {
		t.Fatalf("admin list %+v", cs)
	}
	// Explain no longer lists it as pending.
	ex, err := f.svc.Explain(ctx, admin.ExplainQuery{Tenant: "t1", Size: -1})
	if err != nil || len(ex.Pending) != 0 {
		t.Fatalf("explain: %+v %v", ex.Pending, err)
	}
	// The change reaches the table other nodes build from the store.
	other := New(Config{Store: f.store, Registry: builtin.NewRegistry()})
	if err := other.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if !other.state.Load().table.Active(id) {
		t.Fatal("another node does not see the activation")
	}
	// A reload (the store's version moved) keeps it.
	if err := f.svc.Reload(ctx); err != nil || len(f.putFilters("t1")) != 1 {
		t.Fatalf("reload dropped the activation: %v", err)
	}
}

func TestTransientRevertsAfterHoldDown(t *testing.T) {
	f := newAutomationFixture(t)
	f.apply(t, "FOR TENANT t1 WHEN put_ops > 3 DO SET compression TRANSIENT")
	id := policyID(t, f.fixture)
	f.sync(t)
	controllertest.WaitFor(t, "subscription and ticker", func() bool { return f.feed.subscribed("put_ops", "tenant:t1") && f.clock.Tickers() == 1 })
	f.feed.publish("put_ops", "tenant:t1", 6)
	controllertest.WaitFor(t, "activation", func() bool { return len(f.putFilters("t1")) == 1 })

	f.feed.publish("put_ops", "tenant:t1", 1)
	// Let that value's evaluation pass first, so that it cannot be taken
	// for a tick's.
	controllertest.WaitFor(t, "low value evaluated", func() bool { return strings.Contains(f.status(t, automationID(id)).Reason, "0 of 3 periods") })
	tick := func() {
		t.Helper()
		f.clock.Advance(period)
		now := f.clock.Now()
		controllertest.WaitFor(t, "evaluation", func() bool { return f.status(t, automationID(id)).LastEval.Equal(now) })
	}
	tick()
	tick()
	if len(f.putFilters("t1")) != 1 {
		t.Fatal("reverted before the hold-down")
	}
	tick()
	if got := f.putFilters("t1"); len(got) != 0 {
		t.Fatalf("not reverted after 3 quiet periods: %v", got)
	}
	controllertest.WaitFor(t, "recorded", func() bool { return f.stored(t, id).State == meta.PolicyPending })
	if p := f.stored(t, id); !strings.Contains(p.Reason, "did not hold for 3 periods") {
		t.Fatalf("stored %s %q", p.State, p.Reason)
	}
}

func TestActivationsSurviveRestart(t *testing.T) {
	f := newAutomationFixture(t)
	ctx := context.Background()
	f.apply(t, "FOR TENANT t1 WHEN put_ops > 3 DO SET compression")
	id := policyID(t, f.fixture)
	f.sync(t)
	controllertest.WaitFor(t, "subscription", func() bool { return f.feed.subscribed("put_ops", "tenant:t1") })
	f.feed.publish("put_ops", "tenant:t1", 9)
	controllertest.WaitFor(t, "recorded", func() bool { return f.stored(t, id).State == meta.PolicyActive })

	// A new process: the table is restored from the store before any
	// controller runs or any value arrives...
	svc := New(Config{Store: f.store, Registry: builtin.NewRegistry()})
	if err := svc.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	g := &fixture{store: f.store, svc: svc}
	if got := g.putFilters("t1"); len(got) != 1 || got[0] != "compression" {
		t.Fatalf("after restart: %v", got)
	}
	// ...and its controller, seeing a quiet tenant, keeps it: PERSISTENT.
	feed2, clock, sup, auto := startAutomation(t, svc)
	if err := auto.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	controllertest.WaitFor(t, "subscription", func() bool { return feed2.subscribed("put_ops", "tenant:t1") && clock.Tickers() == 1 })
	for range 10 {
		clock.Advance(period)
		feed2.publish("put_ops", "tenant:t1", 0)
	}
	now := clock.Now()
	controllertest.WaitFor(t, "evaluation", func() bool { return sup.Status()[0].LastEval.Equal(now) })
	if !sup.Status()[0].Active || len(g.putFilters("t1")) != 1 || f.stored(t, id).State != meta.PolicyActive {
		t.Fatal("a PERSISTENT activation did not survive the restart")
	}
}

func TestDeletingThePolicyStopsItsController(t *testing.T) {
	f := newAutomationFixture(t)
	ctx := context.Background()
	f.apply(t, "FOR TENANT t1 WHEN put_ops > 3 OR get_ops > 10 DO SET compression")
	id := policyID(t, f.fixture)
	f.sync(t)
	controllertest.WaitFor(t, "subscriptions", func() bool { return f.feed.count() == 2 })
	f.feed.publish("get_ops", "tenant:t1", 11)
	controllertest.WaitFor(t, "activation", func() bool { return len(f.putFilters("t1")) == 1 })

	if err := f.store.DeletePolicy(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	f.sync(t)
	if ids := f.sup.IDs(); len(ids) != 0 {
		t.Fatalf("controllers after deletion: %v", ids)
	}
	if n := f.feed.count(); n != 0 {
		t.Fatalf("%d subscriptions left", n)
	}
	if got := f.putFilters("t1"); len(got) != 0 {
		t.Fatalf("deleted policy still applies: %v", got)
	}
	// A new dynamic policy starts a controller.
	f.apply(t, "FOR TENANT t1 WHEN delete_ops > 1 DO SET compression")
	f.sync(t)
	if ids := f.sup.IDs(); len(ids) != 1 || ids[0] != automationID(policyID(t, f.fixture)) {
		t.Fatalf("controllers: %v", ids)
	}
}

func TestServeFollowsTheTable(t *testing.T) {
	f := newAutomationFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.auto.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	f.apply(t, "FOR TENANT t1 WHEN put_ops > 3 DO SET compression")
	controllertest.WaitFor(t, "controller", func() bool { return len(f.sup.IDs()) == 1 })
	id := policyID(t, f.fixture)
	if err := f.store.DeletePolicy(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	controllertest.WaitFor(t, "controller gone", func() bool { return len(f.sup.IDs()) == 0 })
}

func TestPanickingControllerRestarts(t *testing.T) {
	f := newAutomationFixture(t)
	f.feed.panics.Store(1)
	f.apply(t, "FOR TENANT t1 WHEN put_ops > 3 DO SET compression")
	id := policyID(t, f.fixture)
	f.sync(t)
	controllertest.WaitFor(t, "restart", func() bool { return f.feed.subscribed("put_ops", "tenant:t1") })
	st := f.status(t, automationID(id))
	if st.Restarts != 1 || !strings.Contains(st.LastFailure, "feed exploded") {
		t.Fatalf("status %+v", st)
	}
	cs, _ := ControllerSource(f.sup).Controllers(context.Background())
	if cs[0].Restarts != 1 {
		t.Fatalf("admin list %+v", cs)
	}
	// The restarted controller works.
	f.feed.publish("put_ops", "tenant:t1", 5)
	controllertest.WaitFor(t, "activation", func() bool { return len(f.putFilters("t1")) == 1 })
}

func TestAllTargetsFollowNewTenants(t *testing.T) {
	f := newAutomationFixture(t)
	ctx := context.Background()
	f.apply(t, "FOR ALL WHEN put_ops > 3 DO SET compression")
	f.sync(t)
	controllertest.WaitFor(t, "subscription", func() bool { return f.feed.subscribed("put_ops", "tenant:t1") })
	if _, _, err := f.store.CreateTenantWithKey(ctx, "t2"); err != nil {
		t.Fatal(err)
	}
	f.sync(t)
	controllertest.WaitFor(t, "t2 followed", func() bool { return f.feed.subscribed("put_ops", "tenant:t2") })
	if f.feed.count() != 2 {
		t.Fatalf("%d subscriptions, want one per tenant", f.feed.count())
	}
	f.feed.publish("put_ops", "tenant:t2", 4)
	controllertest.WaitFor(t, "activation", func() bool { return len(f.putFilters("t1")) == 1 })
}

// failingStore fails SetPolicyState while told to.
type failingStore struct {
	Store
	fail atomic.Bool
}

func (s *failingStore) SetPolicyState(ctx context.Context, id string, st meta.PolicyState, reason string) (meta.Policy, error) {
	if s.fail.Load() {
		return meta.Policy{}, errors.New("store down")
	}
	return s.Store.SetPolicyState(ctx, id, st, reason)
}

func TestActivationWhileTheStoreIsDown(t *testing.T) {
	f := newAutomationFixture(t)
	fs := &failingStore{Store: f.svc.store}
	f.svc.store = fs
	f.apply(t, "FOR TENANT t1 WHEN put_ops > 3 DO SET compression")
	id := policyID(t, f.fixture)
	f.sync(t)
	controllertest.WaitFor(t, "subscription and ticker", func() bool { return f.feed.subscribed("put_ops", "tenant:t1") && f.clock.Tickers() == 1 })
	fs.fail.Store(true)
	f.feed.publish("put_ops", "tenant:t1", 5)
	// The decision applies at once; the store lags.
	controllertest.WaitFor(t, "activation", func() bool { return len(f.putFilters("t1")) == 1 })
	controllertest.WaitFor(t, "error reported", func() bool { return f.status(t, automationID(id)).LastError != "" })
	if f.stored(t, id).State != meta.PolicyPending {
		t.Fatal("state recorded by a failing store")
	}
	// A reload meanwhile keeps the decision.
	if err := f.svc.Reload(context.Background()); err != nil || len(f.putFilters("t1")) != 1 {
		t.Fatalf("reload while unrecorded: %v", err)
	}
	fs.fail.Store(false)
	f.clock.Advance(period)
	controllertest.WaitFor(t, "recorded", func() bool { return f.stored(t, id).State == meta.PolicyActive })
	controllertest.WaitFor(t, "error cleared", func() bool { return f.status(t, automationID(id)).LastError == "" })
	// Once a reload finds the store in agreement, the store is the truth.
	if err := f.svc.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.svc.loadMu.Lock()
	left := len(f.svc.desired)
	f.svc.loadMu.Unlock()
	if left != 0 || len(f.putFilters("t1")) != 1 {
		t.Fatalf("after the store caught up: %d overrides, pipeline %v", left, f.putFilters("t1"))
	}
}

func TestSetActivationTakesEffectOnTheNextRequest(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.apply(t, "FOR TENANT t1 DO SET noop")
	static := policyID(t, f)
	f.apply(t, "FOR TENANT t1 WHEN put_ops > 3 DO SET compression")
	id := policyID(t, f)
	if got := f.putFilters("t1"); len(got) != 1 || got[0] != "noop" {
		t.Fatalf("before: %v", got)
	}
	v := f.svc.Version()
	if err := f.svc.SetActivation(ctx, id, true, "test"); err != nil {
		t.Fatal(err)
	}
	if got := f.putFilters("t1"); len(got) != 2 || got[1] != "compression" {
		t.Fatalf("the next request after activation: %v", got)
	}
	if p := f.stored(t, id); p.State != meta.PolicyActive || p.Reason != "test" {
		t.Fatalf("stored %s %q", p.State, p.Reason)
	}
	if f.svc.Version() != v {
		t.Fatal("an activation in memory changed the table's store version")
	}
	if err := f.svc.SetActivation(ctx, id, false, "off"); err != nil || len(f.putFilters("t1")) != 1 {
		t.Fatalf("deactivation: %v %v", err, f.putFilters("t1"))
	}
	for _, bad := range []string{static, "p999"} {
		if err := f.svc.SetActivation(ctx, bad, true, ""); !errors.Is(err, errNotDynamic) {
			t.Fatalf("activate %s: %v", bad, err)
		}
	}
}
