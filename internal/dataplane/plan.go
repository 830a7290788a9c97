package dataplane

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/facet-sds/facet/internal/filter"
)

// PlanKey is the system-metadata key holding an object's reverse plan.
const PlanKey = "facet.plan"

// planVersion is the encoding version of Plan; readers refuse others.
const planVersion = 1

// Plan is the reverse plan of a stored stream: the reversible filters it
// went through, in the order they were applied.
type Plan struct {
	Version int             `json:"v"`
	Records []filter.Record `json:"r"`
	// Logical, set by Pipeline.Put when one-way transformers changed the
	// body, is the object clients read back; it is not recorded.
	Logical *LogicalOutput `json:"-"`
}

// Empty reports whether the plan undoes nothing.
func (p Plan) Empty() bool { return len(p.Records) == 0 }

// Encode renders the plan in its strict, versioned JSON form.
func (p Plan) Encode() (string, error) {
	p.Version = planVersion
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encode plan: %w", err)
	}
	return string(b), nil
}

// DecodePlan parses a plan written by Encode. Unknown fields and unknown
// versions are refused: stored metadata is data, never code.
func DecodePlan(s string) (Plan, error) {
	var p Plan
	if s == "" {
		return p, nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Plan{}, fmt.Errorf("decode plan: %w", err)
	}
	if p.Version != planVersion {
		return Plan{}, fmt.Errorf("decode plan: unsupported version %d", p.Version)
	}
	for i, r := range p.Records {
		if r.Filter == "" || r.Size < 0 {
			return Plan{}, fmt.Errorf("decode plan: record %d is malformed", i)
		}
	}
	return p, nil
}

// PlanOf returns the reverse plan recorded in system metadata.
func PlanOf(system map[string]string) (Plan, error) {
	return DecodePlan(system[PlanKey])
}
