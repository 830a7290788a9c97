package control

import (
	"context"
	"errors"
	"fmt"

	"github.com/facet-sds/facet/internal/meta"
)

// Activation of dynamic policies. The store's policy state is the truth
// other nodes and the next start read: a dynamic policy stored active is
// in the table. A controller of this process decides first and writes
// second, so its decisions (Service.desired) override the stored states
// until a reload finds the store in agreement.

// errNotDynamic is returned for activating a policy that is not a dynamic
// policy of the table in force (deleted since, say).
var errNotDynamic = errors.New("not a dynamic policy in force")

// activate builds st's table with the dynamic policies that are active and
// makes st the current state. The caller holds loadMu.
func (s *Service) activate(st *state) error {
	for id, on := range s.desired {
		if _, ok := st.compiled.Policy(id); !ok {
			delete(s.desired, id) // deleted or disabled: its controller stops
		} else if (st.stored[id].state == meta.PolicyActive) == on {
			delete(s.desired, id) // the store has caught up: it is the truth again
		}
	}
	var ids []string
	for _, cp := range st.compiled.Dynamic() {
		on, ok := s.desired[cp.ID]
		if !ok {
			on = st.stored[cp.ID].state == meta.PolicyActive
		}
		if on {
			ids = append(ids, cp.ID)
		}
	}
	t, err := st.compiled.Table(ids...)
	if err != nil {
		return fmt.Errorf("activate: %w", err)
	}
	st.table = t
	st.changed = make(chan struct{})
	if s.keyIDs != nil {
		s.keyIDs.m.Store(&st.dataKeys)
	}
	close(s.state.Swap(st).changed)
	return nil
}

// activated lists the dynamic policies active in st's table.
func (st *state) activated() []string {
	var ids []string
	for _, cp := range st.compiled.Dynamic() {
		if st.table.Active(cp.ID) {
			ids = append(ids, cp.ID)
		}
	}
	return ids
}

// SetActivation switches a dynamic policy on or off, as its controller
// decided. The table in memory changes at once, so the next request sees
// it; then the store records the state and the reason, for the other
// nodes, for the next start and for people (GET /v1/policies). When the
// store write fails the decision stays in force here and the error is
// returned: the controller tries again.
func (s *Service) SetActivation(ctx context.Context, id string, active bool, reason string) error {
	s.loadMu.Lock()
	cur := s.state.Load()
	cp, ok := cur.compiled.Policy(id)
	if !ok || !cp.Dynamic {
		s.loadMu.Unlock()
		return fmt.Errorf("activate policy %s: %w", id, errNotDynamic)
	}
	s.desired[id] = active
	if cur.table.Active(id) != active {
		next := &state{version: cur.version, compiled: cur.compiled, dataKeys: cur.dataKeys,
			groups: cur.groups, stored: cur.stored, registry: cur.registry, decoders: cur.decoders}
		if err := s.activate(next); err != nil {
			s.loadMu.Unlock()
			return err
		}
		s.log.Info("dynamic policy switched", "policy", id, "active", active, "reason", reason)
	}
	s.loadMu.Unlock()
	st := meta.PolicyPending
	if active {
		st = meta.PolicyActive
	}
	if _, err := s.store.SetPolicyState(ctx, id, st, reason); err != nil {
		return fmt.Errorf("record the state of policy %s: %w", id, err)
	}
	return nil
}

// activation says whether a dynamic policy is active in the table in
// force, and whether the store says the same.
func (s *Service) activation(id string) (active, recorded bool) {
	st := s.state.Load()
	active = st.table.Active(id)
	return active, (st.stored[id].state == meta.PolicyActive) == active
}
