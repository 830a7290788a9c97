package control

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/policy"
)

var _ admin.PolicyService = (*Service)(nil)

// Validate parses and checks text against what exists now.
func (s *Service) Validate(ctx context.Context, text string) (admin.ValidateResult, error) {
	res, _, err := s.check(ctx, text)
	return res, err
}

// check validates text and also compiles it together with the policies in
// force, so that order warnings name the stored policies involved.
func (s *Service) check(ctx context.Context, text string) (admin.ValidateResult, []*policy.Policy, error) {
	targets, err := s.targets(ctx)
	if err != nil {
		return admin.ValidateResult{}, nil, err
	}
	pols, err := policy.ParseAndCheck("", text, s.vocabulary(s.state.Load().registry, targets))
	res := admin.ValidateResult{Policies: []admin.PolicySummary{}, Errors: []admin.Diagnostic{}, Warnings: []admin.Diagnostic{}}
	if err != nil {
		var pe *policy.Error
		if !errors.As(err, &pe) {
			return res, nil, err
		}
		res.Errors = append(res.Errors, diagnostic(pe, text))
		return res, nil, nil
	}
	if len(pols) == 0 {
		res.Errors = append(res.Errors, admin.Diagnostic{Message: "the text holds no policy"})
		return res, nil, nil
	}
	res.Valid = true
	for i, p := range pols {
		if p.ID == "" {
			p.ID = fmt.Sprintf("new#%d", i+1)
		}
		sum := admin.PolicySummary{Line: p.Line, Name: p.Name, Text: p.Text, State: string(meta.PolicyActive)}
		if p.Dynamic {
			sum.State, sum.Reason = string(meta.PolicyPending), s.pendingReason()
		}
		for _, t := range p.Targets {
			sum.Targets = append(sum.Targets, t.String())
		}
		for _, a := range p.Actions {
			sum.Actions = append(sum.Actions, a.String())
		}
		res.Policies = append(res.Policies, sum)
	}
	// Warnings about the new text in the context of what is in force.
	st := s.state.Load()
	all := append(append([]*policy.Policy{}, policiesOf(st.compiled)...), pols...)
	if compiled, err := policy.Compile(all, nil); err == nil {
		for _, w := range compiled.Warnings {
			if !strings.HasPrefix(w.PolicyID, "new#") {
				continue
			}
			d := admin.Diagnostic{Line: w.Line, Message: w.Msg}
			for _, r := range w.Policies {
				d.Policies = append(d.Policies, r.String())
			}
			res.Warnings = append(res.Warnings, d)
		}
	}
	return res, pols, nil
}

// pendingReason is the reason stored with a new dynamic policy.
func (s *Service) pendingReason() string {
	if s.controllers.Load() {
		return "waiting for its trigger: a controller activates the policy when its metric condition holds"
	}
	return "metric conditions are evaluated by controllers, which are not running yet; the policy is stored but not executed"
}

func policiesOf(c *policy.Compiled) []*policy.Policy {
	out := make([]*policy.Policy, 0, len(c.Policies))
	for _, cp := range c.Policies {
		out = append(out, cp.Policy)
	}
	return out
}

func diagnostic(pe *policy.Error, text string) admin.Diagnostic {
	d := admin.Diagnostic{Line: pe.Line, Column: pe.Col, Message: pe.Msg, Suggestion: pe.Suggestion}
	lines := strings.Split(text, "\n")
	if pe.Line >= 1 && pe.Line <= len(lines) {
		d.Source = strings.TrimRight(lines[pe.Line-1], "\r")
	}
	return d
}

// Apply validates text and stores its policies in one transaction; the
// table is rebuilt before Apply returns, so the next request sees them.
func (s *Service) Apply(ctx context.Context, text string) ([]meta.Policy, admin.ValidateResult, error) {
	res, pols, err := s.check(ctx, text)
	if err != nil || !res.Valid {
		return nil, res, err
	}
	news := make([]meta.NewPolicy, 0, len(pols))
	for _, p := range pols {
		np := meta.NewPolicy{Name: p.Name, Text: p.Text, Line: p.Line, State: meta.PolicyActive}
		if p.Dynamic {
			np.State, np.Reason = meta.PolicyPending, s.pendingReason()
		}
		news = append(news, np)
	}
	stored, err := s.store.AddPolicies(ctx, news)
	if err != nil {
		return nil, res, err
	}
	if err := s.Reload(ctx); err != nil {
		return stored, res, fmt.Errorf("policies stored, but the table was not rebuilt: %w", err)
	}
	return stored, res, nil
}

// Explain returns the effective pipelines for an object and where each
// filter comes from.
func (s *Service) Explain(ctx context.Context, q admin.ExplainQuery) (admin.Explanation, error) {
	if q.Tenant == "" {
		return admin.Explanation{}, fmt.Errorf("%w: tenant is required", admin.ErrInvalidInput)
	}
	st := s.state.Load()
	out := admin.Explanation{Tenant: q.Tenant, Bucket: q.Bucket, Key: q.Key, Version: st.version, Pipelines: []admin.Pipeline{}}
	seenRemoved := map[string]bool{}
	for _, m := range []filter.Method{filter.MethodPut, filter.MethodGet, filter.MethodDelete} {
		ex := st.table.Explain(policy.Query{Tenant: q.Tenant, Bucket: q.Bucket, Key: q.Key, Size: q.Size, ContentType: q.Type, Method: m})
		stages := []filter.Stage{filter.StageGateway, filter.StageStorage}
		switch m {
		case filter.MethodGet:
			stages = []filter.Stage{filter.StageStorage, filter.StageGateway}
		case filter.MethodDelete:
			// Only request filters act on a DELETE (the recycle bin).
			stages = []filter.Stage{filter.StageGateway}
		}
		for _, stage := range stages {
			pl := admin.Pipeline{Method: string(m), Stage: string(stage), Filters: []admin.ExplainStep{}}
			for _, step := range ex.Resolution.Stage(stage) {
				pl.Filters = append(pl.Filters, explainStep(step, ""))
			}
			out.Pipelines = append(out.Pipelines, pl)
		}
		for _, d := range ex.Dropped {
			if d.Reason == policy.DropMethod {
				// Reversible filters are undone on GET from each object's
				// own reverse plan, not by GET pipelines.
				continue
			}
			key := d.Filter + "/" + d.PolicyID + "/" + string(d.Reason)
			if seenRemoved[key] {
				continue
			}
			seenRemoved[key] = true
			out.Removed = append(out.Removed, explainStep(d.Step, fmt.Sprintf("%s: %s", d.Reason, d.Detail)))
		}
	}
	for _, cp := range st.compiled.Dynamic() {
		if !st.table.Active(cp.ID) { // an activated one is in the pipelines
			out.Pending = append(out.Pending, cp.ID)
		}
	}
	for _, w := range st.compiled.Warnings {
		d := admin.Diagnostic{Line: w.Line, Message: w.Msg}
		for _, r := range w.Policies {
			d.Policies = append(d.Policies, r.String())
		}
		out.Warnings = append(out.Warnings, d)
	}
	return out, nil
}

func explainStep(step policy.Step, note string) admin.ExplainStep {
	return admin.ExplainStep{Filter: step.Filter, Params: step.Params, Policy: step.PolicyID, PolicyName: step.PolicyName,
		Level: step.Level.String(), Target: step.Target, Callable: step.Callable, Note: note}
}

// Filters lists the registry in force.
func (s *Service) Filters(context.Context) ([]admin.FilterInfo, error) {
	out := []admin.FilterInfo{}
	reg := s.state.Load().registry
	for _, n := range reg.Names() {
		in, _ := reg.Lookup(n)
		out = append(out, admin.FilterInfoFrom(in))
	}
	return out, nil
}
