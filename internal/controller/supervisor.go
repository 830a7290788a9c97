// Package controller owns the supervision of Facet's control loops and the
// interface of global controllers.
//
// A controller is a long-running loop: an automation controller compiled
// from a dynamic policy (internal/control builds those), or a global
// controller such as the bandwidth share, which turns the latest metric
// snapshot into assignments for every node. Controllers are
// level-triggered (STYLE.md, controller-runtime): each pass reads the
// desired state and the latest observations and applies the difference,
// so a restarted controller picks up from the state, not from its memory.
//
// The Supervisor runs each controller under its own suture supervisor, so
// a controller that keeps failing backs off alone while the others go on;
// it counts restarts per controller and reports them, with what each
// controller says about itself, in Status (the control API's
// GET /v1/controllers).
package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/thejerf/suture/v4"
)

// Kind says what a controller is.
type Kind string

// The kinds of controllers.
const (
	KindAutomation Kind = "automation"
	KindGlobal     Kind = "global"
)

// State is what the supervisor knows of a controller's goroutine.
type State string

// The states. A controller in backoff failed too often recently and waits
// before its next restart.
const (
	StateRunning State = "running"
	StateBackoff State = "backoff"
)

// Service is a controller's loop, as suture runs it: Serve runs until ctx
// ends. A panic or a returned error restarts it.
type Service interface {
	Serve(ctx context.Context) error
}

// Reporter is implemented by controllers that say what they see; the
// supervisor adds it to their Status.
type Reporter interface {
	Report() Report
}

// Report is what a controller says about itself.
type Report struct {
	// Active is true while the controller's output is in force (an
	// automation controller's policy is activated).
	Active bool
	// LastEval is when the controller last evaluated (zero: never).
	LastEval time.Time
	// Targets are the metric targets the controller follows.
	Targets []string
	// Values are the latest metric values it evaluated.
	Values []Value
	// Reason says why it is in its state, for people.
	Reason string
	// LastError is the last error of an evaluation, if the last one failed.
	LastError string
}

// Value is one metric value as a controller last saw it.
type Value struct {
	Target string
	Metric string
	Value  float64
	// Period is the metric period the value is for.
	Period time.Time
}

// Status describes one supervised controller.
type Status struct {
	ID     string
	Kind   Kind
	Policy string // the policy of an automation controller
	State  State
	// Restarts counts the times the controller failed (panicked or
	// returned) and was restarted or queued for restart.
	Restarts int
	// LastFailure is the failure that caused the last restart.
	LastFailure string
	// Instance and LastSeen are an external controller's: its run, and
	// when its last heartbeat arrived.
	Instance string
	LastSeen time.Time
	Report
}

// Config configures a Supervisor.
type Config struct {
	Logger *slog.Logger
	// FailureThreshold, FailureDecay and FailureBackoff are suture's, per
	// controller: when a controller's failures, decaying by half every
	// FailureDecay, exceed FailureThreshold, it waits FailureBackoff
	// before the next restart. Defaults: 3, 30 s, 5 s.
	FailureThreshold float64
	FailureDecay     time.Duration
	FailureBackoff   time.Duration
	// StopTimeout bounds how long Remove waits for a controller to stop
	// (default 10 s).
	StopTimeout time.Duration
	// Observer, when set, hears of controllers starting, restarting and
	// being removed (the Prometheus exporter counts restarts).
	Observer Observer
	// Disabled names built-in controllers not to run: a name disables the
	// controller of that id and those under it ("automation" disables
	// "automation/p7" and the reconciler that starts them). Add and
	// Supervise skip them, and Status lists them as disabled.
	Disabled []string
	// Heartbeats, when set, is the bus Serve hears out-of-process
	// controllers' heartbeats on; Status lists those it heard within
	// MissedHeartbeats of their interval, as KindExternal.
	Heartbeats Subscriber
	// Clock dates heartbeats (default SystemClock).
	Clock Clock
}

// Observer hears of the controllers' lives.
type Observer interface {
	ControllerStarted(id string)
	ControllerRestarted(id string)
	ControllerRemoved(id string)
}

// Supervisor runs controllers and keeps their status.
type Supervisor struct {
	cfg  Config
	log  *slog.Logger
	root *suture.Supervisor

	mu       sync.Mutex
	entries  map[string]*entry
	disabled map[string]Kind // ids Add or Supervise skipped (Config.Disabled)
	ext      externals
}

// entry is one supervised controller.
type entry struct {
	id, policy string
	kind       Kind
	svc        Service
	token      suture.ServiceToken

	mu          sync.Mutex
	state       State
	restarts    int
	lastFailure string
}

// ErrExists is returned by Add for an id already supervised.
var ErrExists = errors.New("controller: a controller with this id is already supervised")

// ErrUnknown is returned by Remove for an id that is not supervised.
var ErrUnknown = errors.New("controller: no such controller")

// NewSupervisor returns a supervisor; controllers added before Serve start
// when it does.
func NewSupervisor(cfg Config) *Supervisor {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.FailureThreshold <= 0 {
		cfg.FailureThreshold = 3
	}
	if cfg.FailureDecay <= 0 {
		cfg.FailureDecay = 30 * time.Second
	}
	if cfg.FailureBackoff <= 0 {
		cfg.FailureBackoff = 5 * time.Second
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = 10 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	s := &Supervisor{cfg: cfg, log: cfg.Logger, entries: map[string]*entry{}, disabled: map[string]Kind{}}
	s.root = suture.New("controllers", suture.Spec{
		EventHook: func(e suture.Event) { s.log.Warn("controller supervisor", "event", e.String()) },
		Timeout:   cfg.StopTimeout,
	})
	return s
}

// Serve runs the controllers until ctx ends, then stops them.
func (s *Supervisor) Serve(ctx context.Context) error {
	if s.cfg.Heartbeats != nil {
		sub, err := s.cfg.Heartbeats.Subscribe(HeartbeatPattern, func(_ string, data []byte) {
			hb, err := DecodeHeartbeat(data)
			if err != nil {
				s.log.Warn("controller heartbeat refused", "err", err)
				return
			}
			s.ext.observe(hb, s.cfg.Clock.Now())
		})
		if err != nil {
			// External controllers then go unlisted; the built-in
			// ones run all the same.
			s.log.Warn("external controllers are not listed: no heartbeat subscription", "err", err)
		} else {
			defer func() { _ = sub.Unsubscribe() }()
		}
	}
	err := s.root.Serve(ctx)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

// Add supervises svc under id. If svc implements Reporter, its reports
// are part of the controller's Status.
func (s *Supervisor) Add(id string, kind Kind, policy string, svc Service) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.entries[id]; ok {
		return fmt.Errorf("%w: %s", ErrExists, id)
	}
	if s.isDisabled(id) {
		if _, ok := s.disabled[id]; !ok {
			s.log.Info("controller disabled", "controller", id)
		}
		s.disabled[id] = kind
		return nil
	}
	e := &entry{id: id, policy: policy, kind: kind, svc: svc, state: StateRunning}
	e.token = s.root.Add(&isolated{s: s, e: e})
	s.entries[id] = e
	if s.cfg.Observer != nil {
		s.cfg.Observer.ControllerStarted(id)
	}
	s.log.Info("controller started", "controller", id, "kind", string(kind))
	return nil
}

// Supervise runs svc under the supervisor, restarted if it fails and
// stopped with the controllers, without listing it among them (Status):
// it is the supervisor's own machinery, such as the automation reconciler
// that adds and removes the listed controllers.
func (s *Supervisor) Supervise(name string, svc Service) {
	s.mu.Lock()
	off := s.isDisabled(name)
	if off {
		s.disabled[name] = KindAutomation
	}
	s.mu.Unlock()
	if off {
		s.log.Info("controller disabled", "controller", name)
		return
	}
	s.root.Add(named{name, svc})
	s.log.Debug("supervising", "service", name)
}

// Remove stops the controller id and waits for it to end.
func (s *Supervisor) Remove(id string) error {
	s.mu.Lock()
	e, ok := s.entries[id]
	delete(s.entries, id)
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknown, id)
	}
	if s.cfg.Observer != nil {
		s.cfg.Observer.ControllerRemoved(id)
	}
	if err := s.root.RemoveAndWait(e.token, s.cfg.StopTimeout); err != nil {
		return fmt.Errorf("controller: stop %s: %w", id, err)
	}
	s.log.Info("controller stopped", "controller", id)
	return nil
}

// IDs lists the supervised controllers, sorted.
func (s *Supervisor) IDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.entries))
	for id := range s.entries {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// isDisabled reports whether Config.Disabled names id or an id above it.
func (s *Supervisor) isDisabled(id string) bool {
	return slices.ContainsFunc(s.cfg.Disabled, func(n string) bool { return id == n || strings.HasPrefix(id, n+"/") })
}

// Status describes every supervised controller, the disabled ones and
// the external ones heard from, sorted by id.
func (s *Supervisor) Status() []Status {
	s.mu.Lock()
	es := make([]*entry, 0, len(s.entries))
	for _, e := range s.entries {
		es = append(es, e)
	}
	out := make([]Status, 0, len(es)+len(s.disabled))
	for id, kind := range s.disabled {
		out = append(out, Status{ID: id, Kind: kind, State: StateDisabled,
			Report: Report{Reason: "disabled by --disable-controller " + s.disabledBy(id)}})
	}
	running := map[string]bool{}
	for id, e := range s.entries {
		if e.kind == KindGlobal {
			running[id] = true
		}
	}
	s.mu.Unlock()
	out = append(out, s.ext.statuses(s.cfg.Clock.Now(), func(name string) bool { return running[name] })...)
	for _, e := range es {
		st := Status{ID: e.id, Kind: e.kind, Policy: e.policy}
		e.mu.Lock()
		st.State, st.Restarts, st.LastFailure = e.state, e.restarts, e.lastFailure
		e.mu.Unlock()
		if r, ok := e.svc.(Reporter); ok {
			st.Report = r.Report()
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// disabledBy is the name in Config.Disabled that disables id.
func (s *Supervisor) disabledBy(id string) string {
	for _, n := range s.cfg.Disabled {
		if id == n || strings.HasPrefix(id, n+"/") {
			return n
		}
	}
	return id
}

// isolated runs one controller under a supervisor of its own, so that its
// failures and its backoff are its own. It is deliberately not a
// suture.HasSupervisor: the root would overwrite its event hook.
type isolated struct {
	s *Supervisor
	e *entry
}

func (i *isolated) String() string { return i.e.id }

func (i *isolated) Serve(ctx context.Context) error {
	// A fresh supervisor per run: a suture supervisor forgets its
	// services when it stops.
	sup := suture.New(i.e.id, suture.Spec{
		EventHook:        i.event,
		FailureThreshold: i.s.cfg.FailureThreshold,
		FailureDecay:     i.s.cfg.FailureDecay.Seconds(),
		FailureBackoff:   i.s.cfg.FailureBackoff,
		Timeout:          i.s.cfg.StopTimeout,
	})
	sup.Add(named{i.e.id, i.e.svc})
	return sup.Serve(ctx)
}

func (i *isolated) event(ev suture.Event) {
	e := i.e
	switch ev.(type) {
	case suture.EventServicePanic, suture.EventServiceTerminate:
		if i.s.cfg.Observer != nil {
			i.s.cfg.Observer.ControllerRestarted(e.id)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch ev := ev.(type) {
	case suture.EventServicePanic:
		e.restarts++
		e.lastFailure = "panic: " + ev.PanicMsg
		i.s.log.Error("controller panicked; restarting", "controller", e.id, "panic", ev.PanicMsg, "restarts", e.restarts)
	case suture.EventServiceTerminate:
		e.restarts++
		e.lastFailure = fmt.Sprint(ev.Err)
		i.s.log.Error("controller failed; restarting", "controller", e.id, "err", e.lastFailure, "restarts", e.restarts)
	case suture.EventBackoff:
		e.state = StateBackoff
		i.s.log.Warn("controller fails repeatedly; backing off", "controller", e.id, "backoff", i.s.cfg.FailureBackoff.String())
	case suture.EventResume:
		e.state = StateRunning
	case suture.EventStopTimeout:
		i.s.log.Error("controller did not stop in time", "controller", e.id)
	}
}

// named gives suture a readable service name.
type named struct {
	name string
	svc  Service
}

func (n named) String() string                  { return n.name }
func (n named) Serve(ctx context.Context) error { return n.svc.Serve(ctx) }
