package meta

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// PolicyState says whether a stored policy is in force.
type PolicyState string

// The policy states.
const (
	// PolicyActive policies are in the compiled table.
	PolicyActive PolicyState = "active"
	// PolicyPending policies are stored but not executed yet (metric
	// conditions, until a controller runs them).
	PolicyPending PolicyState = "pending"
	// PolicyDisabled policies are kept but ignored.
	PolicyDisabled PolicyState = "disabled"
)

// Valid reports whether s is one of the states.
func (s PolicyState) Valid() bool {
	return s == PolicyActive || s == PolicyPending || s == PolicyDisabled
}

// Limits on a policy record; the language needs a line or a few, not more.
const (
	MaxPolicyText = 16 << 10
	maxPolicyName = 63
)

// NewPolicy is a policy to store, as the policy compiler produced it.
type NewPolicy struct {
	// Name is the policy's optional name ("name: FOR ..."), unique among
	// stored policies when set.
	Name string
	// Text is the policy's source.
	Text string
	// Line is where Text started in the text it was submitted in (1-based).
	Line  int
	State PolicyState
	// Reason says why the policy is in State, for people ("metric
	// conditions are not executed yet").
	Reason string
	// Compiled is the compiler's output; opaque to the store.
	Compiled json.RawMessage
}

// Policy is a stored policy.
type Policy struct {
	// ID is assigned by the store: "p" and the sequence number.
	ID string
	// Seq orders policies by declaration: later policies have larger
	// numbers, and the policies of one AddPolicies call are consecutive.
	Seq      uint64
	Name     string
	Text     string
	Line     int
	State    PolicyState
	Reason   string
	Created  time.Time
	Compiled json.RawMessage
}

type policyRecord struct {
	V        int             `json:"v"`
	ID       string          `json:"id"`
	Seq      uint64          `json:"seq"`
	Name     string          `json:"name,omitempty"`
	Text     string          `json:"text"`
	Line     int             `json:"line"`
	State    PolicyState     `json:"state"`
	Reason   string          `json:"reason,omitempty"`
	Created  time.Time       `json:"created"`
	Compiled json.RawMessage `json:"compiled,omitempty"`
}

// policyNameRecord indexes policy names.
type policyNameRecord struct {
	V  int    `json:"v"`
	ID string `json:"id"`
}

func (r *policyRecord) version() int     { return r.V }
func (r *policyNameRecord) version() int { return r.V }

func (r *policyRecord) policy() Policy {
	return Policy{
		ID: r.ID, Seq: r.Seq, Name: r.Name, Text: r.Text, Line: r.Line, State: r.State,
		Reason: r.Reason, Created: r.Created, Compiled: slices.Clone(r.Compiled),
	}
}

const policySeqKey = "policy_seq"

// policyID formats a sequence number as a policy id.
func policyID(seq uint64) string { return "p" + strconv.FormatUint(seq, 10) }

func checkNewPolicy(p NewPolicy) error {
	switch {
	case strings.TrimSpace(p.Text) == "":
		return fmt.Errorf("%w: empty text", ErrInvalidPolicy)
	case len(p.Text) > MaxPolicyText:
		return fmt.Errorf("%w: text over %d bytes", ErrInvalidPolicy, MaxPolicyText)
	case len(p.Name) > maxPolicyName || strings.ContainsAny(p.Name, "\x00\n\r\t /"):
		return fmt.Errorf("%w: name %q: want at most %d characters, no spaces or slashes", ErrInvalidPolicy, p.Name, maxPolicyName)
	case p.Line < 0:
		return fmt.Errorf("%w: negative line", ErrInvalidPolicy)
	case !p.State.Valid():
		return fmt.Errorf("%w: state %q: want active, pending or disabled", ErrInvalidPolicy, p.State)
	}
	if p.Compiled != nil {
		if err := checkBlob("compiled policy", p.Compiled); err != nil {
			return err
		}
	}
	return nil
}

// AddPolicies stores policies in one transaction, in the given order, with
// one change-version bump: a text of several policies takes effect whole or
// not at all. A name already used by a stored policy (or twice in the
// batch) fails with ErrPolicyNameTaken.
func (s *Store) AddPolicies(ctx context.Context, ps []NewPolicy) ([]Policy, error) {
	for i, p := range ps {
		if err := checkNewPolicy(p); err != nil {
			return nil, fmt.Errorf("meta: add policies: policy %d: %w", i+1, err)
		}
	}
	if len(ps) == 0 {
		return []Policy{}, nil
	}
	var out []Policy
	err := s.kv.update(ctx, func(tx kvTx) error {
		out = make([]Policy, 0, len(ps))
		seq, err := readCounter(tx, policySeqKey)
		if err != nil {
			return err
		}
		now := s.timestamp()
		for _, p := range ps {
			seq++
			id := policyID(seq)
			if p.Name != "" {
				raw, err := tx.get(tblPolicyNames, p.Name)
				if err != nil {
					return err
				}
				if raw != nil {
					return fmt.Errorf("%w: %q", ErrPolicyNameTaken, p.Name)
				}
				if err := putRecord(tx, tblPolicyNames, p.Name, &policyNameRecord{V: recordVersion, ID: id}); err != nil {
					return err
				}
			}
			rec := policyRecord{
				V: recordVersion, ID: id, Seq: seq, Name: p.Name, Text: p.Text, Line: p.Line,
				State: p.State, Reason: p.Reason, Created: now, Compiled: p.Compiled,
			}
			if err := putRecord(tx, tblPolicies, id, &rec); err != nil {
				return err
			}
			out = append(out, rec.policy())
		}
		if err := tx.put(tblSystem, policySeqKey, strconv.AppendUint(nil, seq, 10)); err != nil {
			return err
		}
		_, err = bumpVersion(tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("meta: add policies: %w", err)
	}
	for _, p := range out {
		s.log.Info("policy added", "policy", p.ID, "name", p.Name, "state", string(p.State))
	}
	return out, nil
}

// readCounter reads a decimal counter of the system table (0 when absent).
func readCounter(tx kvTx, key string) (uint64, error) {
	raw, err := tx.get(tblSystem, key)
	if err != nil || raw == nil {
		return 0, err
	}
	v, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s/%s: malformed counter", tblSystem, key)
	}
	return v, nil
}

func getPolicy(tx kvTx, id string) (*policyRecord, error) {
	var rec policyRecord
	ok, err := getRecord(tx, tblPolicies, id, &rec)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrPolicyNotFound, id)
	}
	return &rec, nil
}

// GetPolicy returns one policy by id, or ErrPolicyNotFound.
func (s *Store) GetPolicy(ctx context.Context, id string) (Policy, error) {
	var p Policy
	err := s.kv.view(ctx, func(tx kvTx) error {
		rec, err := getPolicy(tx, id)
		if err != nil {
			return err
		}
		p = rec.policy()
		return nil
	})
	if err != nil {
		return Policy{}, fmt.Errorf("meta: get policy: %w", err)
	}
	return p, nil
}

// ListPolicies lists all policies in declaration order.
func (s *Store) ListPolicies(ctx context.Context) ([]Policy, error) {
	var out []Policy
	err := s.kv.view(ctx, func(tx kvTx) error {
		var err error
		out, err = listPolicies(tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("meta: list policies: %w", err)
	}
	return out, nil
}

func listPolicies(tx kvTx) ([]Policy, error) {
	out := []Policy{}
	err := scanRecords(tx, tblPolicies, "", func(rec *policyRecord) error {
		out = append(out, rec.policy())
		return nil
	})
	// Ids sort as strings (p10 < p2); declaration order is Seq.
	slices.SortFunc(out, func(a, b Policy) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, err
}

// DeletePolicy deletes a policy by id.
func (s *Store) DeletePolicy(ctx context.Context, id string) error {
	err := s.kv.update(ctx, func(tx kvTx) error {
		rec, err := getPolicy(tx, id)
		if err != nil {
			return err
		}
		if err := tx.del(tblPolicies, id); err != nil {
			return err
		}
		if rec.Name != "" {
			if err := tx.del(tblPolicyNames, rec.Name); err != nil {
				return err
			}
		}
		_, err = bumpVersion(tx)
		return err
	})
	if err != nil {
		return fmt.Errorf("meta: delete policy: %w", err)
	}
	s.log.Info("policy deleted", "policy", id)
	return nil
}

// SetPolicyState changes a policy's state and the reason given for it, and
// returns the policy as it is now.
func (s *Store) SetPolicyState(ctx context.Context, id string, state PolicyState, reason string) (Policy, error) {
	if !state.Valid() {
		return Policy{}, fmt.Errorf("meta: set policy state: %w: state %q", ErrInvalidPolicy, state)
	}
	var p Policy
	err := s.kv.update(ctx, func(tx kvTx) error {
		rec, err := getPolicy(tx, id)
		if err != nil {
			return err
		}
		rec.State, rec.Reason = state, reason
		if err := putRecord(tx, tblPolicies, id, rec); err != nil {
			return err
		}
		p = rec.policy()
		_, err = bumpVersion(tx)
		return err
	})
	if err != nil {
		return Policy{}, fmt.Errorf("meta: set policy state: %w", err)
	}
	s.log.Info("policy state changed", "policy", id, "state", string(state))
	return p, nil
}
