package controller

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sync"
	"time"
)

// GlobalController computes assignments for every node from the latest
// metric snapshot: the bandwidth share of the QoS model is one. Reconcile
// is a function of the snapshot, the controller's configuration and the
// state the previous call returned (level-triggered): the controller keeps
// no state of its own; the runner holds it between periods and may call
// Reconcile again with the same snapshot, after a restart, or skip a
// period.
type GlobalController interface {
	// Name identifies the controller in subjects and in the control API:
	// lower-case letters, digits, '-' and '_'.
	Name() string
	// Reconcile returns the assignments and the state for the next call;
	// state is nil on the first call. A failed call leaves the state as
	// it was.
	Reconcile(ctx context.Context, snap MetricSnapshot, state Memory) (Assignments, Memory, error)
}

// Memory is a controller's state between periods (what it published
// last, say), opaque to the runner that holds it.
type Memory any

// MetricSnapshot is the latest value of every metric for every target,
// merged across nodes, and, where the source keeps them, per node.
type MetricSnapshot struct {
	Time    time.Time `json:"time"`
	Samples []Sample  `json:"samples"`
}

// Sample is one metric value for one target in one period.
type Sample struct {
	Metric string `json:"metric"`
	// Target is "tenant:T", "bucket:T/B" (or "object:T/B/K").
	Target string `json:"target"`
	// Node is the node the value was measured on; "" for the value merged
	// across nodes.
	Node   string    `json:"node,omitempty"`
	Value  float64   `json:"value"`
	Period time.Time `json:"period"`
}

// Value returns the merged value of metric for target.
func (s MetricSnapshot) Value(metric, target string) (float64, bool) {
	for _, x := range s.Samples {
		if x.Node == "" && x.Metric == metric && x.Target == target {
			return x.Value, true
		}
	}
	return 0, false
}

// Targets lists the targets that have a merged value of metric, sorted.
func (s MetricSnapshot) Targets(metric string) []string {
	var out []string
	for _, x := range s.Samples {
		if x.Node == "" && x.Metric == metric {
			out = append(out, x.Target)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Assignment is one value a global controller assigns: a rate for a
// target on a node, say.
type Assignment struct {
	// Node is the node the assignment is for; "" for every node.
	Node string `json:"node,omitempty"`
	// Target is "tenant:T" or "bucket:T/B"; a flow class goes in Key.
	Target string `json:"target"`
	// Key says what is assigned: "get_bw", "put_bw", "ops"... The
	// controller and its consumers agree on the keys and their units.
	Key   string  `json:"key"`
	Value float64 `json:"value"`
}

// Assignments are a controller's complete output for one period: what it
// does not list is not assigned.
type Assignments []Assignment

// canonical sorts a copy, so that equal outputs compare equal.
func (as Assignments) canonical() Assignments {
	out := slices.Clone(as)
	slices.SortFunc(out, func(a, b Assignment) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Target, b.Target), cmp.Compare(a.Key, b.Key), cmp.Compare(a.Value, b.Value))
	})
	if out == nil {
		out = Assignments{}
	}
	return out
}

// SnapshotSource gives the latest metric snapshot (the workload-metric
// aggregator).
type SnapshotSource interface {
	Snapshot(ctx context.Context) (MetricSnapshot, error)
}

// Publisher publishes a message on a bus subject (internal/bus's Bus
// satisfies it).
type Publisher interface {
	Publish(subject string, data []byte) error
}

// AssignmentSubject is the subject a controller's assignments are
// published on (docs/controllers.md).
func AssignmentSubject(controller string) string {
	return "facet.controller." + controller + ".assignments"
}

// AssignmentMessage is the JSON published on AssignmentSubject. Each
// message replaces the previous one: it holds every assignment in force.
type AssignmentMessage struct {
	// V is the message version, 1; a reader refuses others.
	V          int    `json:"v"`
	Controller string `json:"controller"`
	// Instance identifies one run of the controller; Seq counts its
	// messages from 1. A consumer keeps the highest Seq of an instance and
	// takes any message of a new instance.
	Instance string `json:"instance"`
	Seq      uint64 `json:"seq"`
	// Term is the publisher's lease term (docs/bus.md); 0, or absent,
	// from a publisher without a lease (the single-node serve role). A
	// consumer that has seen a term refuses messages of an older one: they
	// come from a holder that lost the lease.
	Term        uint64      `json:"term,omitempty"`
	Time        time.Time   `json:"time"`
	Assignments Assignments `json:"assignments"`
}

// AssignmentVersion is the version of AssignmentMessage.
const AssignmentVersion = 1

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// ValidName reports whether name can name a global controller.
func ValidName(name string) bool { return nameRE.MatchString(name) }

// GlobalConfig configures a GlobalRunner.
type GlobalConfig struct {
	Source    SnapshotSource
	Publisher Publisher
	Clock     Clock         // default SystemClock
	Period    time.Duration // default 1 s
	// Refresh republishes unchanged assignments this often, so that
	// consumers can tell a live controller from a silent one (the
	// bandwidth controller's gateways fall back to static rates without
	// it); 0 publishes on change only.
	Refresh time.Duration
	// Lease, when set, gates every publication: nothing is published
	// unless it is held, under the same term, both when the period starts
	// and just before the message goes out. Nil publishes under term 0.
	Lease  Lease
	Logger *slog.Logger
}

// Lease says whether this process holds the lease that allows it to
// publish, and under which term.
type Lease interface {
	Held() (term uint64, ok bool)
}

// GlobalRunner runs a GlobalController every period and publishes its
// assignments when they change. It is a Service and a Reporter: add it to
// a Supervisor with KindGlobal.
type GlobalRunner struct {
	c        GlobalController
	cfg      GlobalConfig
	log      *slog.Logger
	instance string

	// state is the controller's state between periods; only step, on
	// the runner's one goroutine, touches it.
	state Memory

	mu          sync.Mutex
	published   Assignments // nil until the first publication
	publishedAt time.Time
	seq         uint64
	lastEval    time.Time
	lastErr     string
	samples     []Sample // the merged samples of the last snapshot
}

// NewGlobalRunner returns a runner for c.
func NewGlobalRunner(c GlobalController, cfg GlobalConfig) (*GlobalRunner, error) {
	if !ValidName(c.Name()) {
		return nil, fmt.Errorf("controller: name %q: want lower-case letters, digits, '-' and '_'", c.Name())
	}
	if cfg.Source == nil || cfg.Publisher == nil {
		return nil, errors.New("controller: a global controller needs a snapshot source and a publisher")
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Period <= 0 {
		cfg.Period = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &GlobalRunner{c: c, cfg: cfg, log: cfg.Logger.With("controller", c.Name()), instance: rand.Text()[:16]}, nil
}

// Serve reconciles every period until ctx ends. A failed period is
// reported and retried on the next one; only a panic restarts the runner.
func (r *GlobalRunner) Serve(ctx context.Context) error {
	t := r.cfg.Clock.NewTicker(r.cfg.Period)
	defer t.Stop()
	for {
		if err := r.Step(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("global controller period failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C():
		}
	}
}

// Step runs one period: snapshot, Reconcile, and publication if the
// assignments differ from the last ones published.
func (r *GlobalRunner) Step(ctx context.Context) error {
	err := r.step(ctx)
	r.mu.Lock()
	r.lastEval = r.cfg.Clock.Now()
	r.lastErr = ""
	if err != nil {
		r.lastErr = err.Error()
	}
	r.mu.Unlock()
	return err
}

// held is the lease's term, or false when the lease is not held.
func (r *GlobalRunner) held() (uint64, bool) {
	if r.cfg.Lease == nil {
		return 0, true
	}
	return r.cfg.Lease.Held()
}

func (r *GlobalRunner) step(ctx context.Context) error {
	term, ok := r.held()
	if !ok {
		return nil
	}
	snap, err := r.cfg.Source.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	var merged []Sample
	for _, s := range snap.Samples {
		if s.Node == "" && len(merged) < maxReportedSamples {
			merged = append(merged, s)
		}
	}
	r.mu.Lock()
	r.samples = merged
	r.mu.Unlock()
	as, next, err := r.c.Reconcile(ctx, snap, r.state)
	if err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	r.state = next
	as = as.canonical()
	r.mu.Lock()
	same := r.published != nil && slices.Equal(as, r.published)
	fresh := r.cfg.Refresh <= 0 || r.cfg.Clock.Now().Sub(r.publishedAt) < r.cfg.Refresh
	seq := r.seq + 1
	r.mu.Unlock()
	if same && fresh {
		return nil
	}
	msg := AssignmentMessage{V: AssignmentVersion, Controller: r.c.Name(), Instance: r.instance, Seq: seq, Term: term,
		Time: r.cfg.Clock.Now().UTC(), Assignments: as}
	data, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("encode assignments: %w", err)
	}
	// A controller being stopped computes from a cancelled context (an
	// empty set, when its SLO reads fail), and one that lost its lease
	// during the period speaks for nobody: neither is published.
	if ctx.Err() != nil {
		return nil
	}
	if now, ok := r.held(); !ok || now != term {
		r.log.Info("assignments dropped: the lease was lost during the period", "term", term)
		return nil
	}
	if err := r.cfg.Publisher.Publish(AssignmentSubject(r.c.Name()), data); err != nil {
		// Not recorded as published: the next period tries again.
		return fmt.Errorf("publish: %w", err)
	}
	r.mu.Lock()
	r.published, r.seq, r.publishedAt = as, seq, r.cfg.Clock.Now()
	r.mu.Unlock()
	if !same {
		r.log.Info("assignments published", "seq", seq, "assignments", len(as))
	}
	return nil
}

// maxReportedSamples bounds the values a global controller reports: it
// sees every tenant, the control API needs a glimpse.
const maxReportedSamples = 100

// Report implements Reporter.
func (r *GlobalRunner) Report() Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := Report{Active: r.published != nil, LastEval: r.lastEval, LastError: r.lastErr}
	for _, s := range r.samples {
		rep.Values = append(rep.Values, Value{Target: s.Target, Metric: s.Metric, Value: s.Value, Period: s.Period})
	}
	if r.published != nil {
		rep.Reason = fmt.Sprintf("%d assignments published (seq %d)", len(r.published), r.seq)
	}
	return rep
}
