// Package diskformat owns the rule by which Facet's persistent stores (the
// metadata store and the embedded filesystem backend's index) carry a
// format version: written when a store is created, checked whenever it is
// opened, an older format migrated step by step and a newer one refused,
// so that a binary never misreads what a later release wrote. Each store
// keeps its own number and its own steps; this package plans between them.
package diskformat

import (
	"errors"
	"fmt"
)

// Unversioned is the format of a store written before formats were
// recorded (no version stored).
const Unversioned = 0

// ErrTooNew is wrapped by Plan's error for a store written by a newer
// release.
var ErrTooNew = errors.New("format newer than this binary reads")

// Step migrates a store from format From to From+1; Apply runs inside the
// store's write transaction T, with the version update, so that a crash
// leaves the store at one format or the next.
type Step[T any] struct {
	From  int
	What  string
	Apply func(T) error
}

// Plan returns the steps that take a store at format stored to current,
// in order (none when it is current). what names the store in errors. A
// store newer than current is refused with ErrTooNew and what to do; the
// steps must cover every format from Unversioned to current-1.
func Plan[T any](what string, stored, current int, steps []Step[T]) ([]Step[T], error) {
	if stored > current {
		return nil, fmt.Errorf("%s has format %d, and this binary reads formats up to %d: run the release that wrote it (or a newer one), or restore a backup made before the upgrade: %w",
			what, stored, current, ErrTooNew)
	}
	if stored < Unversioned {
		return nil, fmt.Errorf("%s has format %d, which no release writes: the store is damaged", what, stored)
	}
	var plan []Step[T]
	for from := stored; from < current; from++ {
		i := -1
		for j, s := range steps {
			if s.From == from {
				i = j
				break
			}
		}
		if i < 0 {
			return nil, fmt.Errorf("%s: no migration from format %d (this binary's steps are incomplete)", what, from)
		}
		plan = append(plan, steps[i])
	}
	return plan, nil
}

// Describe renders a plan for `facet migrate`: one line per step.
func Describe[T any](plan []Step[T]) []string {
	lines := make([]string, len(plan))
	for i, s := range plan {
		lines[i] = fmt.Sprintf("format %d -> %d: %s", s.From, s.From+1, s.What)
	}
	return lines
}

// Report is what `facet migrate` tells of one store.
type Report struct {
	// Store names it: a path, or a redacted URL.
	Store string `json:"store"`
	// Exists is false when the store holds nothing yet.
	Exists bool `json:"exists"`
	// Stored is the format the store records, Current the one this
	// binary writes.
	Stored  int `json:"stored"`
	Current int `json:"current"`
	// Steps are the migrations opening the store runs, in order; Error
	// says why opening it would be refused instead.
	Steps []string `json:"steps,omitempty"`
	Error string   `json:"error,omitempty"`
}

// Inspect fills a report for a store found at format stored (fresh when it
// holds nothing yet), from its steps.
func Inspect[T any](store string, stored, current int, fresh bool, steps []Step[T]) Report {
	rep := Report{Store: store, Exists: !fresh, Stored: stored, Current: current}
	if fresh {
		return rep
	}
	plan, err := Plan(store, stored, current, steps)
	if err != nil {
		rep.Error = err.Error()
	}
	rep.Steps = Describe(plan)
	return rep
}
