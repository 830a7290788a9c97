package block

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/policy"
)

// VolumeExplanation says what applies to a volume's I/O and where it
// comes from: its block filters in order with their policies, each
// throttle with its source, and the dynamic policies that would change
// them when their trigger holds.
type VolumeExplanation struct {
	Volume string `json:"volume"`
	Tenant string `json:"tenant"`
	// PolicyVersion is the metadata version the policies were read at.
	PolicyVersion uint64 `json:"policy_version"`
	// Filters is the stack the policies in force give the volume, in the
	// order writes go through it; reads undo it in reverse.
	Filters []StackStep `json:"filters"`
	// Open is true while NBD connections use the volume; Running is
	// then the stack their I/O goes through, which lags Filters when the
	// policies changed a filter that transforms the stored bytes.
	Open    bool     `json:"open"`
	Running []string `json:"running,omitempty"`
	// Applied is the stack recorded in the volume's metadata when it was
	// last applied, and since when.
	Applied      []meta.AppliedFilter `json:"applied"`
	AppliedSince time.Time            `json:"applied_since,omitzero"`
	// Throttles are read_bw, write_bw (bytes/s), read_iops and write_iops
	// (operations/s), in that order.
	Throttles []ThrottleSource `json:"throttles"`
	// Pending are the dynamic policies that target the volume and are not
	// in force now.
	Pending []PendingPolicy `json:"pending"`
	// Notes say in words what needs attention.
	Notes []string `json:"notes,omitempty"`
}

// ThrottleSource is one throttle of a volume and where its limit comes
// from: the API (PUT /volumes/{volume}/throttle), a policy, or none.
type ThrottleSource struct {
	Throttle string `json:"throttle"`
	// Limit is per second; 0 is no limit.
	Limit  int64  `json:"limit"`
	Source string `json:"source"` // api, policy or none
	// Policy, PolicyName, Line, Target and Dynamic describe the SLO record
	// in force for the volume, when there is one (also when the API's
	// limit replaces it: Overridden is then the policy's limit).
	Policy     string `json:"policy,omitempty"`
	PolicyName string `json:"policy_name,omitempty"`
	Line       int    `json:"line,omitempty"`
	Target     string `json:"target,omitempty"`
	Dynamic    bool   `json:"dynamic,omitempty"`
	Overridden int64  `json:"overridden,omitempty"`
	// Unused is, while the volume is open, what the limit allowed since
	// it was opened (beyond the burst) and no request took: when a volume
	// falls short of its limit, the requests did not come.
	Unused int64 `json:"unused,omitempty"`
}

// Throttle sources.
const (
	SourceAPI    = "api"
	SourcePolicy = "policy"
	SourceNone   = "none"
)

// PendingPolicy is a dynamic policy for a volume whose trigger does not
// hold now (or that no controller evaluates).
type PendingPolicy struct {
	Policy  string `json:"policy"`
	Name    string `json:"name,omitempty"`
	Line    int    `json:"line"`
	Trigger string `json:"trigger"`
	// Actions are what it sets when in force ("throttle", "nop").
	Actions []string `json:"actions"`
}

// throttleNames are the SLO parameters of SET throttle, in
// ThrottleSource order.
var throttleNames = [4]string{"read_bw", "write_bw", "read_iops", "write_iops"}

// ExplainVolume explains a volume: what its I/O goes through now and
// why.
func (m *Manager) ExplainVolume(ctx context.Context, name string) (VolumeExplanation, error) {
	rec, err := m.cfg.Store.GetVolume(ctx, name)
	if err != nil {
		return VolumeExplanation{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ex := VolumeExplanation{Volume: rec.Name, Tenant: rec.Tenant, PolicyVersion: m.version,
		Filters: m.stackSteps(name), Applied: rec.Stack, AppliedSince: rec.StackSince,
		Throttles: m.throttleSources(rec), Pending: m.pending(name)}
	if ex.Filters == nil {
		ex.Filters = []StackStep{}
	}
	if ex.Applied == nil {
		ex.Applied = []meta.AppliedFilter{}
	}
	if ex.Pending == nil {
		ex.Pending = []PendingPolicy{}
	}
	if v, ok := m.open[name]; ok {
		ex.Open, ex.Running = true, stepNames(v.steps)
		for i, b := range [4]*bucket{v.readBW, v.writeBW, v.readOps, v.writeOps} {
			ex.Throttles[i].Unused = int64(b.unused())
		}
		if !sameApplied(appliedFilters(v.steps), appliedFilters(ex.Filters)) {
			ex.Notes = append(ex.Notes, fmt.Sprintf("the open volume runs %v; the policies' stack %v applies when it is next opened, "+
				"and bytes written through the running stack will then be read through the new one", ex.Running, stepNames(ex.Filters)))
		}
	} else if len(rec.Stack) > 0 && !sameApplied(m.storedPart(stepsOf(rec.Stack)), m.storedPart(ex.Filters)) {
		ex.Notes = append(ex.Notes, fmt.Sprintf("the volume's bytes were last written through %v; the policies now give %v, "+
			"which reads them differently", appliedNames(rec.Stack), stepNames(ex.Filters)))
	}
	return ex, nil
}

// throttleSources resolves each throttle as effectiveThrottle does and
// says where it comes from. m.mu is held.
func (m *Manager) throttleSources(v meta.Volume) []ThrottleSource {
	var slo policy.SLO
	var fromPolicy bool
	if m.table != nil {
		slo, fromPolicy = m.table.SLO(policy.SLOThrottle, v.Name)
	}
	api := [4]int64{v.Throttle.ReadBW, v.Throttle.WriteBW, v.Throttle.ReadIOPS, v.Throttle.WriteIOPS}
	out := make([]ThrottleSource, 0, len(throttleNames))
	for i, n := range throttleNames {
		ts := ThrottleSource{Throttle: n, Source: SourceNone}
		var pol int64
		if fromPolicy {
			if s, ok := slo.Params[n]; ok {
				f, _ := strconv.ParseFloat(s, 64)
				pol = int64(f)
			}
		}
		if pol > 0 {
			ts.Limit, ts.Source = pol, SourcePolicy
			ts.Policy, ts.PolicyName, ts.Line, ts.Dynamic = slo.PolicyID, slo.PolicyName, slo.Line, slo.Dynamic
			ts.Target = "ALL VOLUMES"
			if slo.Level != policy.LevelAll {
				ts.Target = "VOLUME " + slo.Target
			}
		}
		if api[i] > 0 {
			ts.Overridden = pol
			ts.Limit, ts.Source = api[i], SourceAPI
		}
		out = append(out, ts)
	}
	return out
}

// pending lists the dynamic policies targeting volume name that are not
// in force. m.mu is held.
func (m *Manager) pending(name string) []PendingPolicy {
	if m.table == nil {
		return nil
	}
	var out []PendingPolicy
	for _, cp := range m.table.Compiled().Dynamic() {
		if m.table.Active(cp.ID) || !targetsVolume(cp.Policy, name) {
			continue
		}
		p := PendingPolicy{Policy: cp.ID, Name: cp.Policy.Name, Line: cp.Policy.Line, Actions: []string{}}
		if cp.Trigger != nil {
			p.Trigger = cp.Trigger.String()
		}
		for _, a := range cp.Policy.Actions {
			p.Actions = append(p.Actions, a.Filter)
		}
		out = append(out, p)
	}
	return out
}

func targetsVolume(p *policy.Policy, name string) bool {
	for _, t := range p.Targets {
		if t.Kind == policy.TargetVolume && t.Name == name || t.Kind == policy.TargetAll && t.Scope == policy.TargetVolume {
			return true
		}
	}
	return false
}

func stepsOf(fs []meta.AppliedFilter) []StackStep {
	out := make([]StackStep, len(fs))
	for i, f := range fs {
		out[i] = StackStep{Filter: f.Filter, Params: f.Params, Policy: f.Policy}
	}
	return out
}

func appliedNames(fs []meta.AppliedFilter) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Filter)
	}
	return out
}
