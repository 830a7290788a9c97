package block

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/facet-sds/facet/internal/meta"
)

// applied is a volume's stack to record in its metadata.
type applied struct {
	name  string
	steps []StackStep
}

// appliedFilters is steps as the volume's record keeps them.
func appliedFilters(steps []StackStep) []meta.AppliedFilter {
	var out []meta.AppliedFilter
	for _, s := range steps {
		out = append(out, meta.AppliedFilter{Filter: s.Filter, Params: maps.Clone(s.Params), Policy: s.Policy})
	}
	return out
}

func sameApplied(a, b []meta.AppliedFilter) bool {
	return slices.EqualFunc(a, b, func(x, y meta.AppliedFilter) bool {
		return x.Filter == y.Filter && x.Policy == y.Policy && maps.Equal(x.Params, y.Params)
	})
}

// storedPart is the filters of steps that change the stored bytes, with
// their parameters: two stacks with the same stored part read the same
// bytes back. Unknown filters count as changing them.
func (m *Manager) storedPart(steps []StackStep) []meta.AppliedFilter {
	var out []meta.AppliedFilter
	for _, s := range steps {
		if in, ok := m.cfg.Filters.Lookup(s.Filter); ok && in.Transparent {
			continue
		}
		out = append(out, meta.AppliedFilter{Filter: s.Filter, Params: s.Params})
	}
	return out
}

// restack gives an open volume the stack the policies now say, when the
// change leaves the stored bytes as they are (transparent filters such
// as nop, which a dynamic policy may set and unset while the volume
// runs). A change of the filters that transform the bytes is not applied
// under the volume's connections: bytes written through the old stack
// would be read back through the new one. m.mu is held.
func (m *Manager) restack(ctx context.Context, v *volume) {
	steps := m.stackSteps(v.rec.Name)
	if sameApplied(appliedFilters(steps), appliedFilters(v.steps)) {
		return
	}
	if !sameApplied(m.storedPart(steps), m.storedPart(v.steps)) {
		if !v.warned {
			m.log.Warn("the policies change how an open volume's bytes are stored; its connections keep the stack they have",
				"volume", v.rec.Name, "running", stepNames(v.steps), "policies", stepNames(steps))
			v.warned = true
		}
		return
	}
	st, err := m.buildStack(ctx, v.rec, steps)
	if err != nil {
		m.log.Warn("volume stack not rebuilt; keeping the running one", "volume", v.rec.Name, "err", err)
		return
	}
	v.stack.Store(st)
	v.steps, v.warned = steps, false
	m.log.Info("volume stack changed", "volume", v.rec.Name, "filters", st.Names)
}

func stepNames(steps []StackStep) []string {
	out := []string{}
	for _, s := range steps {
		out = append(out, s.Filter)
	}
	return out
}

// unrecorded lists the open volumes whose running stack is not the one
// their record holds. m.mu is held.
func (m *Manager) unrecorded() []applied {
	var out []applied
	for name, v := range m.open {
		rec, ok := m.vols[name]
		if ok && !sameApplied(appliedFilters(v.steps), rec.Stack) {
			out = append(out, applied{name: name, steps: slices.Clone(v.steps)})
		}
	}
	return out
}

// recordApplied stores the stack a volume's I/O now goes through in its
// record, so that the API shows what its bytes went through even after
// the policies changed. Failures are logged: the stack is in force
// whether recorded or not.
func (m *Manager) recordApplied(ctx context.Context, name string, steps []StackStep) {
	now := time.Now().UTC()
	rec, err := m.cfg.Store.UpdateVolume(ctx, name, func(v *meta.Volume, _ []meta.Pool, _ []meta.Volume) error {
		v.Stack, v.StackSince = appliedFilters(steps), now
		return nil
	})
	if err != nil {
		m.log.Warn("volume stack not recorded", "volume", name, "err", err)
		return
	}
	m.mu.Lock()
	if _, ok := m.vols[name]; ok {
		m.vols[name] = rec
	}
	m.mu.Unlock()
}
