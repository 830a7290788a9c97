package control

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/facet-sds/facet/internal/policy"
)

// automatonSpec is what an automation controller is built from. Two specs
// that are the same describe the same controller: a reload that leaves a
// policy's spec alone leaves its controller running.
type automatonSpec struct {
	policyID string
	text     string
	// targets are the Feed targets the trigger is evaluated on, sorted.
	targets   []string
	transient bool
	holdDown  int

	trigger policy.Cond
	metrics []string        // canonical names the trigger reads, sorted
	rates   map[string]bool // metrics that read 0 when no value is fresh
}

func (s automatonSpec) same(o automatonSpec) bool {
	return s.policyID == o.policyID && s.text == o.text && slices.Equal(s.targets, o.targets) &&
		s.transient == o.transient && s.holdDown == o.holdDown
}

// newSpec describes the controller of a dynamic policy. A policy is
// TRANSIENT when all its actions are: activation is per policy, and a
// PERSISTENT action must never be undone, so a mixed policy stays in
// force once triggered.
func newSpec(cp *policy.CompiledPolicy, targets []string, holdDown int) automatonSpec {
	s := automatonSpec{policyID: cp.ID, text: cp.Policy.Text, targets: targets, holdDown: max(holdDown, 1),
		trigger: cp.Trigger, metrics: cp.Metrics, rates: map[string]bool{}, transient: len(cp.Policy.Actions) > 0}
	for _, a := range cp.Policy.Actions {
		if a.Mode != policy.ModeTransient {
			s.transient = false
		}
	}
	walkMetricCmps(cp.Trigger, func(m *policy.MetricCmp) {
		if m.Info.Unit == policy.KindOpsRate || m.Info.Unit == policy.KindByteRate {
			s.rates[metricName(m)] = true
		}
	})
	return s
}

func walkMetricCmps(c policy.Cond, fn func(*policy.MetricCmp)) {
	switch c := c.(type) {
	case *policy.BinaryCond:
		walkMetricCmps(c.X, fn)
		walkMetricCmps(c.Y, fn)
	case *policy.MetricCmp:
		fn(c)
	}
}

func metricName(m *policy.MetricCmp) string {
	if m.Info.Name != "" {
		return m.Info.Name
	}
	return m.Metric
}

// automaton is the decision logic of an automation controller, without
// goroutines: it keeps the latest value of each metric of each target and
// decides, on each evaluation, whether the policy is active.
//
//   - The trigger holds when it holds on the values of one target (each
//     target is evaluated on its own values; activation is per policy).
//   - A value older than stale is no value: a rate metric (ops/s, bytes/s)
//     then reads 0, because the aggregator only reports targets with
//     traffic; any other metric makes its comparisons false.
//   - During the first stale window after a (re)start, or while the feed
//     reports itself unhealthy, a missing value makes a false outcome
//     unknown, which changes nothing: silence is not yet evidence.
//   - PERSISTENT: once active, active for good. TRANSIENT: deactivated
//     after holdDown consecutive periods (ticks) in which the trigger was
//     false; a period in which it holds starts the count again.
type automaton struct {
	spec   automatonSpec
	stale  time.Duration
	start  time.Time
	latest map[string]map[string]reading // target, metric

	// automatonState is what decide reads and returns: the automaton
	// holds it between evaluations, decide keeps none.
	automatonState
}

// automatonState is an automaton's state between evaluations.
type automatonState struct {
	active   bool
	quiet    int // consecutive false periods while active (TRANSIENT)
	lastEval time.Time
	reason   string // why it is in its state: the last switch, or the stored reason
	note     string // what the last evaluation saw, when it changed nothing
}

// targetView is one target's metric values as an evaluation sees them.
type targetView struct {
	target  string
	value   func(string) (float64, bool)
	missing bool // a value the trigger names is missing and may yet come
}

type reading struct {
	v  Value
	at time.Time // when it arrived, on the controller's clock
}

type verdict int

const (
	verdictFalse verdict = iota
	verdictUnknown
	verdictTrue
)

func newAutomaton(spec automatonSpec, active bool, reason string, now time.Time, stale time.Duration) *automaton {
	return &automaton{spec: spec, stale: stale, start: now, latest: map[string]map[string]reading{},
		automatonState: automatonState{active: active, reason: reason}}
}

func (a *automaton) observe(v Value, now time.Time) {
	m := a.latest[v.Target]
	if m == nil {
		m = map[string]reading{}
		a.latest[v.Target] = m
	}
	m[v.Metric] = reading{v: v, at: now}
}

// lookup returns the values of one target as EvalMetrics reads them, and
// whether a missing value makes the outcome unknown.
func (a *automaton) lookup(target string, now time.Time, healthy bool) (func(string) (float64, bool), bool) {
	grace := !healthy || now.Sub(a.start) < a.stale
	missing := false
	vals := map[string]float64{}
	for _, m := range a.spec.metrics {
		r, ok := a.latest[target][m]
		switch {
		case ok && now.Sub(r.at) <= a.stale:
			vals[m] = r.v.Value
		case grace:
			missing = true
		case a.spec.rates[m]:
			vals[m] = 0
		}
	}
	return func(m string) (float64, bool) { v, ok := vals[m]; return v, ok }, missing
}

// evaluate decides on the latest values. tick says that a period ended
// (hold-down counts periods, not values). It reports whether the
// activation changed.
func (a *automaton) evaluate(now time.Time, tick, healthy bool) bool {
	views := make([]targetView, 0, len(a.spec.targets))
	for _, t := range a.spec.targets {
		value, missing := a.lookup(t, now, healthy)
		views = append(views, targetView{target: t, value: value, missing: missing})
	}
	next, switched := decide(a.spec, a.automatonState, views, now, tick)
	a.automatonState = next
	return switched
}

// decide is the automaton's pure function: from its state, the targets'
// values and the time, the next state and whether the policy switched.
func decide(spec automatonSpec, st automatonState, views []targetView, now time.Time, tick bool) (automatonState, bool) {
	st.lastEval = now
	out, where, desc := verdictFalse, "", ""
	for _, v := range views {
		d := describe(spec.trigger, v.value)
		if policy.EvalMetrics(spec.trigger, v.value) {
			out, where, desc = verdictTrue, v.target, d
			break
		}
		if v.missing {
			out = verdictUnknown
		}
		if where == "" {
			where, desc = v.target, d
		}
	}
	stamp := now.UTC().Format(time.RFC3339)
	switch {
	case len(spec.targets) == 0:
		st.note = "no metric target: the policy's targets have no tenant or bucket to measure"
		return st, false
	case out == verdictTrue:
		st.quiet = 0
		if !st.active {
			st.active = true
			st.reason = fmt.Sprintf("%s on %s at %s", desc, where, stamp)
			st.note = ""
			return st, true
		}
		st.note = fmt.Sprintf("holds: %s on %s", desc, where)
	case out == verdictUnknown:
		st.note = "waiting for metric values"
	case st.active && spec.transient:
		if tick {
			st.quiet++
		}
		if st.quiet >= spec.holdDown {
			st.active, st.quiet = false, 0
			st.reason = fmt.Sprintf("deactivated at %s: the trigger did not hold for %d periods (%s on %s)",
				stamp, spec.holdDown, desc, where)
			st.note = ""
			return st, true
		}
		st.note = fmt.Sprintf("the trigger has not held for %d of %d periods (%s on %s)", st.quiet, spec.holdDown, desc, where)
	case st.active:
		st.note = "PERSISTENT: stays active"
	default:
		st.note = fmt.Sprintf("does not hold: %s on %s", desc, where)
	}
	return st, false
}

// describe renders a trigger with the values it was evaluated on:
// "put_ops=4.2 > 3 AND (get_bw=0 < 10MB/s OR lat=? > 300ms)".
func describe(c policy.Cond, value func(string) (float64, bool)) string {
	switch c := c.(type) {
	case *policy.BinaryCond:
		side := func(x policy.Cond) string {
			s := describe(x, value)
			if b, ok := x.(*policy.BinaryCond); ok && !strings.EqualFold(b.Op, c.Op) {
				s = "(" + s + ")"
			}
			return s
		}
		return side(c.X) + " " + strings.ToUpper(c.Op) + " " + side(c.Y)
	case *policy.MetricCmp:
		name := metricName(c)
		shown := "?"
		if v, ok := value(name); ok {
			shown = formatValue(v, c.Info.Unit)
		}
		return fmt.Sprintf("%s=%s %s %s", name, shown, c.Op, c.Value.Raw)
	case nil:
		return "true"
	}
	return c.String()
}

// formatValue writes a metric value in its kind's usual units.
func formatValue(v float64, kind policy.ValueKind) string {
	switch kind {
	case policy.KindByteRate:
		return humanBytes(v) + "/s"
	case policy.KindBytes:
		return humanBytes(v)
	case policy.KindDuration:
		return time.Duration(v * float64(time.Second)).Round(time.Microsecond).String()
	}
	return trimFloat(v)
}

func humanBytes(v float64) string {
	units := []string{"B", "KB", "MB", "GB", "TB", "PB"}
	i := 0
	for math.Abs(v) >= 1000 && i < len(units)-1 {
		v /= 1000
		i++
	}
	return trimFloat(v) + units[i]
}

func trimFloat(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}
