package admin

import (
	"context"
	"errors"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/meta"
)

// PolicyService is the policy language as the control API consumes it:
// parsing, compiling, storing and explaining policies. internal/policy
// implements it; the API only routes to it.
type PolicyService interface {
	// Validate parses and checks text (one or many policies) without
	// storing anything. Invalid text is not an error: it is a result with
	// Errors. The error return is for failures of the service itself.
	Validate(ctx context.Context, text string) (ValidateResult, error)
	// Apply validates text and, when it is valid, stores its policies in
	// one transaction (meta.Store.AddPolicies) and returns them. When the
	// result has Errors nothing is stored. Errors wrapping meta errors
	// (ErrPolicyNameTaken...) or ErrInvalidInput are answered as the
	// client's mistakes.
	Apply(ctx context.Context, text string) ([]meta.Policy, ValidateResult, error)
	// Explain returns the effective pipelines for an object, and which
	// policy contributed each filter. Errors wrapping ErrInvalidInput are
	// answered 400 with their message.
	Explain(ctx context.Context, q ExplainQuery) (Explanation, error)
	// Filters lists the filter registry: native filters and registered
	// ones, in name order.
	Filters(ctx context.Context) ([]FilterInfo, error)
}

// UsageSource reports what a tenant stores.
type UsageSource interface {
	// TenantUsage returns the tenant's totals over all its buckets.
	TenantUsage(ctx context.Context, tenant string) (Usage, error)
}

// Usage is a tenant's storage consumption.
type Usage struct {
	// StoredBytes is what the tenant's objects take on the storage, after
	// filters (compression shrinks it, encryption adds a little).
	StoredBytes int64
	// LogicalBytes is what clients wrote: the sum of objects' sizes.
	LogicalBytes int64
	Objects      int64
}

// ErrInvalidInput marks a PolicyService error caused by the request (an
// explain query for a malformed key, say); the API answers 400 with the
// error's message, which must therefore hold nothing secret.
var ErrInvalidInput = errors.New("invalid input")

// ExplainQuery names the object an explanation is for. Empty Bucket means
// any bucket of the tenant, empty Key any key of the bucket.
type ExplainQuery struct {
	Tenant string
	Bucket string
	Key    string
	// Size is the object's size in bytes, or -1 when not given (OBJECT_SIZE
	// conditions then do not match).
	Size int64
	// Type is the object's content type as OBJECT_TYPE conditions see it
	// (such as application/pdf); empty when not given.
	Type string
}

// ValidateResult is what the policy language says about a text. It is the
// body of POST /policies:validate.
type ValidateResult struct {
	// Valid is true when Errors is empty.
	Valid bool `json:"valid"`
	// Policies summarizes each policy the text holds, in order.
	Policies []PolicySummary `json:"policies"`
	Errors   []Diagnostic    `json:"errors"`
	Warnings []Diagnostic    `json:"warnings"`
}

// PolicySummary describes one parsed policy of a text.
type PolicySummary struct {
	// Line is where the policy starts in the text (1-based).
	Line int    `json:"line"`
	Name string `json:"name,omitempty"`
	Text string `json:"text"`
	// State is the state it is (or would be) stored in: active, or pending
	// for policies with metric conditions until a controller activates them.
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// Targets and Actions are the compiler's reading, for people:
	// "TENANT t1", "SET compression(engine=gzip) ON gateway".
	Targets []string `json:"targets,omitempty"`
	Actions []string `json:"actions,omitempty"`
}

// Diagnostic is an error or a warning about a policy text, pointing into it.
type Diagnostic struct {
	// Line and Column are 1-based; Column counts characters (not bytes) of
	// Source. 0 means the diagnostic is about the text as a whole.
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`
	// Source is the whole source line Line points into, for the caret.
	Source string `json:"source,omitempty"`
	// Suggestion is the "did you mean" candidate, when there is one.
	Suggestion string `json:"suggestion,omitempty"`
	// Policies names the policies involved (ids, or lines of the text).
	Policies []string `json:"policies,omitempty"`
}

// Explanation is the body of GET /explain.
type Explanation struct {
	Tenant string `json:"tenant"`
	Bucket string `json:"bucket,omitempty"`
	Key    string `json:"key,omitempty"`
	// Version is the change version of the policies explained.
	Version uint64 `json:"version"`
	// Pipelines holds one pipeline per method and stage, in the order they
	// run (PUT gateway, PUT storage, GET storage, GET gateway).
	Pipelines []Pipeline `json:"pipelines"`
	// Removed lists inherited filters that a more specific DELETE removed.
	Removed []ExplainStep `json:"removed,omitempty"`
	// Pending lists the ids of dynamic policies (metric conditions) that
	// are not activated: their triggers do not hold, or no controller runs.
	Pending  []string     `json:"pending,omitempty"`
	Warnings []Diagnostic `json:"warnings,omitempty"`
}

// Pipeline is the filters that run, in order, for one method at one stage.
type Pipeline struct {
	Method  string        `json:"method"` // PUT or GET
	Stage   string        `json:"stage"`  // gateway or storage
	Filters []ExplainStep `json:"filters"`
}

// ExplainStep is one filter of a pipeline and where it comes from.
type ExplainStep struct {
	Filter string            `json:"filter"`
	Params map[string]string `json:"params,omitempty"`
	// Policy is the id of the policy that contributed the filter.
	Policy     string `json:"policy"`
	PolicyName string `json:"policy_name,omitempty"`
	// Level is how specific that policy's target is: object, bucket,
	// tenant, group or all.
	Level string `json:"level"`
	// Target is the target as the policy wrote it ("TENANT t1").
	Target   string `json:"target"`
	Callable bool   `json:"callable,omitempty"`
	// Note says more, e.g. which policy's DELETE removed an entry of
	// Explanation.Removed.
	Note string `json:"note,omitempty"`
}

// FilterInfo describes a filter of the registry.
type FilterInfo struct {
	Name       string        `json:"name"`
	Version    int           `json:"version"`
	Kind       string        `json:"kind"` // native or wasm
	Methods    []string      `json:"methods"`
	Stages     []string      `json:"stages"`
	Reversible bool          `json:"reversible"`
	Params     []FilterParam `json:"params"`
	Doc        string        `json:"doc,omitempty"`
	// Owner is the tenant whose policies alone may use a run-time
	// registered filter; empty for native and administrators' filters.
	Owner string `json:"owner,omitempty"`
}

// FilterParam describes one typed parameter of a filter.
type FilterParam struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	Default string   `json:"default,omitempty"`
	Min     *float64 `json:"min,omitempty"`
	Max     *float64 `json:"max,omitempty"`
	Enum    []string `json:"enum,omitempty"`
	Doc     string   `json:"doc,omitempty"`
}

// FilterInfoFrom converts a filter's self-description to the API's.
func FilterInfoFrom(in *filter.Info) FilterInfo {
	out := FilterInfo{
		Name: in.Name, Version: in.Version, Kind: in.Kind, Reversible: in.Reversible, Doc: in.Doc, Owner: in.Owner,
		Methods: make([]string, 0, len(in.Methods)), Stages: make([]string, 0, len(in.Stages)),
		Params: make([]FilterParam, 0, len(in.Params)),
	}
	for _, m := range in.Methods {
		out.Methods = append(out.Methods, string(m))
	}
	for _, s := range in.Stages {
		out.Stages = append(out.Stages, string(s))
	}
	for _, p := range in.Params {
		fp := FilterParam{Name: p.Name, Type: string(p.Type), Default: p.Default, Enum: p.Enum, Doc: p.Doc}
		if p.Max > p.Min { // filter.ParamSpec: bounded only when Max > Min
			lo, hi := p.Min, p.Max
			fp.Min, fp.Max = &lo, &hi
		}
		out.Params = append(out.Params, fp)
	}
	return out
}
