package policy

import "fmt"

// DropReason says why a candidate filter entry is not in a pipeline.
type DropReason string

// The reasons.
const (
	DropOverridden DropReason = "overridden" // a more specific or later entry for the filter won
	DropDeleted    DropReason = "deleted"    // the winning entry is a DELETE
	DropCondition  DropReason = "condition"  // its object condition is false for the request
	DropMethod     DropReason = "method"     // the filter does not run on the request's method
	DropInactive   DropReason = "inactive"   // a dynamic policy whose trigger does not hold now
)

// Dropped is a filter entry that was considered for a request and left
// out, with why.
type Dropped struct {
	Step              // the entry; for a DELETE, Params is nil
	Delete bool       `json:"delete,omitempty"` // the entry is a DELETE
	Reason DropReason `json:"reason"`
	By     *Winner    `json:"by,omitempty"` // what won over it (overridden, deleted)
	Detail string     `json:"detail"`       // a sentence for people
}

// Winner is the entry that took a dropped entry's place.
type Winner struct {
	PolicyRef
	Level  Level  `json:"level"`
	Target string `json:"target"`
}

// Explanation is a request's pipeline with the entries that lost.
type Explanation struct {
	Resolution Resolution `json:"resolution"`
	Dropped    []Dropped  `json:"dropped"`
}

// Explain resolves q like Resolve and also reports every entry whose
// target covers q but that is not in the pipeline, and why. It is meant
// for the control plane (explain), not the request path.
func (t *Table) Explain(q Query) Explanation {
	var cands []*entry
	for _, e := range t.c.entries {
		if e.matches(&q) {
			cands = append(cands, e)
		}
	}
	w := make([]*entry, t.nfilters)
	holds := make([]bool, len(cands))
	for i, e := range cands {
		holds[i] = e.pred == nil || e.pred.eval(&q)
		if !t.active[e.pidx] || !holds[i] {
			continue
		}
		if cur := w[e.fid]; cur == nil || e.outranks(cur) {
			w[e.fid] = e
		}
	}
	ex := Explanation{Resolution: resolution(w, q.Method)}
	reported := map[int]bool{} // by decl: an action reaching q through two targets is one entry
	for i, e := range cands {
		win := w[e.fid]
		if win != nil && win != e && win.decl == e.decl || reported[e.decl] && win != e {
			continue
		}
		reported[e.decl] = true
		d := Dropped{Step: e.step, Delete: e.del}
		if e.del {
			d.Params = nil
		}
		switch {
		case win == e:
			if e.del || e.methodOK(q.Method) {
				continue
			}
			d.Reason = DropMethod
			d.Detail = fmt.Sprintf("%s does not run on %s", e.step.Filter, q.Method)
		case !t.active[e.pidx]:
			d.Reason = DropInactive
			d.Detail = fmt.Sprintf("dynamic policy %s is not active: a controller activates it while %s holds",
				e.step.PolicyID, t.c.Policies[e.pidx].Trigger)
		case !holds[i]:
			d.Reason = DropCondition
			d.Detail = fmt.Sprintf("object condition %s is false for this request", e.pred.text)
		default:
			ref := t.c.Policies[win.pidx].Ref()
			d.By = &Winner{PolicyRef: ref, Level: win.level, Target: win.step.Target}
			d.Reason = DropOverridden
			verb := "overridden"
			if win.del {
				d.Reason, verb = DropDeleted, "deleted"
			}
			if win.level > e.level {
				d.Detail = fmt.Sprintf("%s by %s at %s level (%s)", verb, ref, win.level, win.step.Target)
			} else {
				d.Detail = fmt.Sprintf("%s by %s, declared later at the same %s level (%s)", verb, ref, win.level, win.step.Target)
			}
		}
		ex.Dropped = append(ex.Dropped, d)
	}
	return ex
}

// EvalMetrics evaluates a trigger given each metric's current value in the
// metric's canonical unit (ops/s, bytes/s, bytes, seconds, fraction).
// Object terms count as true: the data plane checks them per request. A
// metric with no value makes its comparison false.
func EvalMetrics(c Cond, value func(metric string) (float64, bool)) bool {
	switch c := c.(type) {
	case *BinaryCond:
		if c.Op == "OR" {
			return EvalMetrics(c.X, value) || EvalMetrics(c.Y, value)
		}
		return EvalMetrics(c.X, value) && EvalMetrics(c.Y, value)
	case *MetricCmp:
		name := c.Info.Name
		if name == "" {
			name = c.Metric
		}
		v, ok := value(name)
		return ok && compare(v, c.Op, c.Threshold)
	case *ObjectCmp:
		return true
	}
	return c == nil
}
