package qos

import (
	"encoding/json"
	"testing"

	"github.com/facet-sds/facet/internal/controller"
)

// TestAgentIgnoresOlderLeaseTerm: a gateway applies assignments of the
// newest lease term it has seen and ignores a deposed holder's (issue 23:
// a controller that lost its lease published once more); a message
// without a term (a serve role's, or an older controller's) counts as
// term 0.
func TestAgentIgnoresOlderLeaseTerm(t *testing.T) {
	l := NewLimiter(LimiterConfig{Node: "a", Capacity: 10e6})
	a := NewAgent(l, nil, 0, nil, nil)
	send := func(raw string) {
		t.Helper()
		a.assign([]byte(raw))
	}
	msg := func(inst string, seq, term uint64) string {
		m := controller.AssignmentMessage{V: controller.AssignmentVersion, Controller: ControllerName, Instance: inst, Seq: seq, Term: term,
			Assignments: controller.Assignments{{Target: "tenant:t1", Key: "get_bw", Value: float64(seq)}}}
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	assigner := func(want string) {
		t.Helper()
		if got := l.Report().Assigner; got != want {
			t.Fatalf("assignment in force from %q; want %q", got, want)
		}
	}
	// No term at all, as written before terms: taken.
	send(`{"v":1,"controller":"bandwidth","instance":"old","seq":1,"assignments":[]}`)
	assigner("old")
	send(msg("first", 1, 2))
	assigner("first")
	send(msg("second", 1, 3)) // a newer holder
	assigner("second")
	send(msg("first", 2, 2)) // the deposed holder, late
	assigner("second")
	send(`{"v":1,"controller":"bandwidth","instance":"old","seq":2,"assignments":[]}`) // term 0, once 3 is seen
	assigner("second")
	if got := a.StaleAssignments(); got != 2 {
		t.Fatalf("StaleAssignments = %d; want 2", got)
	}
	send(msg("second", 2, 3)) // same term goes on
	if rep := l.Report(); rep.Assigner != "second" || rep.Seq != 2 {
		t.Fatalf("report %q seq %d; want second seq 2", rep.Assigner, rep.Seq)
	}
}
