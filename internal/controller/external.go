package controller

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/facet-sds/facet/internal/bus"
)

// KindExternal is a controller that runs in another process and says so
// with heartbeats (docs/controllers.md); the supervisor lists it, it
// does not run it.
const KindExternal Kind = "external"

// StateDisabled is a built-in controller the process was told not to run
// (Config.Disabled).
const StateDisabled State = "disabled"

// HeartbeatPattern matches every controller's heartbeats.
const HeartbeatPattern = "facet.controller.*.heartbeat"

// HeartbeatSubject is the subject an out-of-process controller publishes
// its heartbeats on (docs/bus.md).
func HeartbeatSubject(controller string) string {
	return "facet.controller." + controller + ".heartbeat"
}

// HeartbeatVersion is the version of Heartbeat.
const HeartbeatVersion = 1

// Heartbeat is the JSON an out-of-process controller publishes on
// HeartbeatSubject at least every IntervalMs.
type Heartbeat struct {
	// V is the message version, 1; a reader refuses others.
	V          int    `json:"v"`
	Controller string `json:"controller"`
	// Instance identifies one run of the controller, as in its
	// assignment messages.
	Instance string    `json:"instance"`
	Time     time.Time `json:"time"`
	// IntervalMs is how often the controller beats (default 1000); it is
	// listed until MissedHeartbeats of them are missed.
	IntervalMs int64 `json:"interval_ms,omitempty"`
	// Status says what the controller is doing, for people.
	Status string `json:"status,omitempty"`
}

// MissedHeartbeats is how many intervals an external controller may stay
// silent before it is no longer listed.
const MissedHeartbeats = 3

// DecodeHeartbeat reads a heartbeat, refusing other versions, a name that
// cannot name a controller, and a negative interval.
func DecodeHeartbeat(data []byte) (Heartbeat, error) {
	var hb Heartbeat
	if err := json.Unmarshal(data, &hb); err != nil {
		return Heartbeat{}, fmt.Errorf("controller: heartbeat: %w", err)
	}
	if hb.V != HeartbeatVersion {
		return Heartbeat{}, fmt.Errorf("controller: heartbeat: version %d, want %d", hb.V, HeartbeatVersion)
	}
	if !ValidName(hb.Controller) {
		return Heartbeat{}, fmt.Errorf("controller: heartbeat: name %q: want lower-case letters, digits, '-' and '_'", hb.Controller)
	}
	if hb.IntervalMs < 0 {
		return Heartbeat{}, fmt.Errorf("controller: heartbeat of %s: negative interval", hb.Controller)
	}
	return hb, nil
}

// Subscriber subscribes to bus subjects (internal/bus's Bus satisfies it).
type Subscriber interface {
	Subscribe(pattern string, fn func(subject string, data []byte)) (bus.Subscription, error)
}

// externals is what the supervisor knows of out-of-process controllers:
// each one's last heartbeat and when it arrived.
type externals struct {
	mu   sync.Mutex
	last map[string]seen // by controller name
}

type seen struct {
	hb Heartbeat
	at time.Time
}

func (x *externals) observe(hb Heartbeat, now time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.last == nil {
		x.last = map[string]seen{}
	}
	x.last[hb.Controller] = seen{hb: hb, at: now}
}

// statuses lists the controllers heard from within MissedHeartbeats of
// their interval, and forgets the others. builtin names the built-in
// controllers running here, which an external one of the same name
// competes with.
func (x *externals) statuses(now time.Time, builtin func(name string) bool) []Status {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := []Status{}
	for name, s := range x.last {
		interval := time.Duration(s.hb.IntervalMs) * time.Millisecond
		if interval <= 0 {
			interval = time.Second
		}
		if now.Sub(s.at) > MissedHeartbeats*interval {
			delete(x.last, name)
			continue
		}
		reason := []string{fmt.Sprintf("heartbeat every %s from instance %s", interval, s.hb.Instance)}
		if s.hb.Status != "" {
			reason = append(reason, s.hb.Status)
		}
		if builtin(name) {
			reason = append(reason, fmt.Sprintf("competes with the built-in controller %s: start the server with --disable-controller %s", name, name))
		}
		out = append(out, Status{ID: "external/" + name, Kind: KindExternal, State: StateRunning, Instance: s.hb.Instance,
			LastSeen: s.at, Report: Report{Active: true, Reason: strings.Join(reason, "; ")}})
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.ID, b.ID) })
	return out
}
