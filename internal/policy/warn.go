package policy

import (
	"fmt"
	"strings"

	"github.com/facet-sds/facet/internal/filter"
)

// Warning is something the compiler accepts but that is probably not what
// the author meant: a pipeline order that defeats a filter, a policy that
// silently replaces another, a DELETE that removes nothing, an empty group.
type Warning struct {
	PolicyID string      `json:"policyId"` // the policy the warning is about (the later one)
	Line     int         `json:"line"`
	Msg      string      `json:"message"`
	Policies []PolicyRef `json:"policies"` // every policy involved
}

func (w Warning) String() string { return fmt.Sprintf("line %d: %s", w.Line, w.Msg) }

func (c *Compiled) warnings() []Warning {
	var ws []Warning
	ws = append(ws, c.groupWarnings()...)
	ws = append(ws, c.sameLevelWarnings()...)
	ws = append(ws, c.deleteWarnings()...)
	ws = append(ws, c.orderWarnings()...)
	return ws
}

func (c *Compiled) warn(about int, others []int, format string, args ...any) Warning {
	p := c.Policies[about]
	w := Warning{PolicyID: p.ID, Line: p.Policy.Line, Msg: fmt.Sprintf(format, args...)}
	seen := map[int]bool{}
	for _, i := range append(others, about) {
		if !seen[i] {
			seen[i] = true
			w.Policies = append(w.Policies, c.Policies[i].Ref())
		}
	}
	return w
}

func (c *Compiled) groupWarnings() []Warning {
	var ws []Warning
	for i, cp := range c.Policies {
		for _, t := range cp.Policy.Targets {
			if t.Kind != TargetGroup {
				continue
			}
			members := c.groups[t.Name]
			if len(members) == 0 {
				ws = append(ws, c.warn(i, nil, "%s: group %s has no members, so the policy applies to nothing", cp.Ref(), t.Name))
				continue
			}
			for _, a := range cp.Policy.Actions {
				if a.SLO != SLOBandwidth {
					continue
				}
				for _, m := range members {
					if strings.Contains(m, "/") {
						ws = append(ws, c.warn(i, nil, "%s: bandwidth is per tenant, so bucket %s of group %s is left out", cp.Ref(), m, t.Name))
					}
				}
			}
		}
	}
	return ws
}

// sameLevelWarnings reports two static, unconditional entries for the same
// filter on the same target: the later one silently wins.
func (c *Compiled) sameLevelWarnings() []Warning {
	var ws []Warning
	type key struct {
		fid                        int
		level                      Level
		tenant, bucket, key, group string
		vol                        bool
		volume                     string
	}
	first := map[key]*entry{}
	warned := map[[2]int]bool{}
	for _, e := range c.entries {
		if e.pred != nil || c.Policies[e.pidx].Dynamic {
			continue
		}
		k := key{e.fid, e.level, e.tenant, e.bucket, e.key, e.group, e.vol, e.volume}
		if e.group != "" {
			k.tenant, k.bucket = "", "" // one warning per group, not per member
		}
		prev, ok := first[k]
		if !ok || prev.pidx == e.pidx {
			first[k] = e
			continue
		}
		first[k] = e
		if warned[[2]int{prev.pidx, e.pidx}] {
			continue
		}
		warned[[2]int{prev.pidx, e.pidx}] = true
		what := "sets it again"
		if e.del {
			what = "deletes it"
		}
		prevVerb := "sets"
		if prev.del {
			prevVerb = "deletes"
		}
		ws = append(ws, c.warn(e.pidx, []int{prev.pidx}, "%s %s %s for %s and %s later %s at the same level; the later one wins",
			c.Policies[prev.pidx].Ref(), prevVerb, e.step.Filter, e.step.Target, c.Policies[e.pidx].Ref(), what))
	}
	return ws
}

// covers reports whether broader entry b reaches the scope of the more
// specific entry e.
func covers(b, e *entry) bool {
	if b.vol != e.vol || b.level >= e.level {
		return false
	}
	if b.vol {
		return b.level == LevelAll
	}
	switch b.level {
	case LevelAll:
		return true
	case LevelGroup, LevelTenant:
		if e.tenant == "" {
			return true // a bare bucket: its owner is not known here
		}
		return b.tenant == e.tenant && (b.bucket == "" || b.bucket == e.bucket)
	case LevelBucket:
		return b.bucket == e.bucket && (b.tenant == "" || e.tenant == "" || b.tenant == e.tenant)
	}
	return false
}

func sameScope(a, b *entry) bool {
	return a.level == b.level && a.vol == b.vol && a.volume == b.volume && a.tenant == b.tenant && a.bucket == b.bucket && a.key == b.key
}

// deleteWarnings reports DELETEs with no broader (or earlier same-level)
// SET of their filter to remove.
func (c *Compiled) deleteWarnings() []Warning {
	var ws []Warning
	warned := map[int]bool{} // decl
	for _, d := range c.entries {
		if !d.del || warned[d.decl] {
			continue
		}
		found := false
		for _, s := range c.entries {
			if !s.del && s.fid == d.fid && (covers(s, d) || sameScope(s, d) && s.decl < d.decl) {
				found = true
				break
			}
		}
		if !found {
			warned[d.decl] = true
			ws = append(ws, c.warn(d.pidx, nil, "%s: DELETE %s for %s removes nothing: no broader policy sets %s",
				c.Policies[d.pidx].Ref(), d.step.Filter, d.step.Target, d.step.Filter))
		}
	}
	return ws
}

// orderWarnings resolves the PUT pipeline, with every dynamic policy
// active and every object condition taken as true, at each target some
// policy names, and checks it against the order rules.
func (c *Compiled) orderWarnings() []Warning {
	all := make([]bool, len(c.Policies))
	for i := range all {
		all[i] = true
	}
	t := c.build(all)
	var points []Query
	seen := map[objectKey]bool{}
	addPoint := func(q Query) {
		if k := (objectKey{q.Tenant, q.Bucket, q.Key}); !seen[k] {
			seen[k] = true
			points = append(points, q)
		}
	}
	var volumes []string
	seenVol := map[string]bool{}
	for _, e := range c.entries {
		switch {
		case e.vol:
			if !seenVol[e.volume] {
				seenVol[e.volume] = true
				volumes = append(volumes, e.volume)
			}
		case e.level == LevelObject:
			addPoint(Query{Tenant: e.tenant, Bucket: e.bucket, Key: e.key})
		default:
			addPoint(Query{Tenant: e.tenant, Bucket: e.bucket})
		}
	}
	var ws []Warning
	warned := map[string]bool{}
	check := func(r Resolution, where string) {
		steps := append(append([]Step(nil), r.Gateway...), r.Storage...)
		for _, rule := range c.rules {
			fi, ti := -1, -1
			for i, s := range steps {
				switch s.Filter {
				case rule.First:
					fi = i
				case rule.Then:
					ti = i
				}
			}
			if fi < 0 || ti < 0 || ti > fi {
				continue
			}
			f, th := steps[fi], steps[ti]
			k := "rule|" + rule.First + "|" + rule.Then + "|" + f.PolicyID + "|" + th.PolicyID
			if warned[k] {
				continue
			}
			warned[k] = true
			fp, tp := c.byID[f.PolicyID], c.byID[th.PolicyID]
			ws = append(ws, c.warn(fp, []int{tp}, "%s from %s at the %s stage would run after %s from %s at the %s stage on PUT for %s: %s; declare %s first or run it at an earlier stage",
				f.Filter, c.Policies[fp].Ref(), f.Stage, th.Filter, c.Policies[tp].Ref(), th.Stage, where, rule.Why, f.Filter))
		}
		for j, s := range steps {
			if s.Info == nil || s.Info.Reversible || !runsOn(s.Info, filter.MethodPut) {
				continue
			}
			for _, prev := range steps[:j] {
				if prev.Info == nil || !prev.Info.Reversible {
					continue
				}
				k := "rev|" + prev.Filter + "|" + s.Filter + "|" + prev.PolicyID + "|" + s.PolicyID
				if warned[k] {
					continue
				}
				warned[k] = true
				sp, pp := c.byID[s.PolicyID], c.byID[prev.PolicyID]
				ws = append(ws, c.warn(sp, []int{pp}, "%s from %s runs after %s from %s on PUT for %s, so it sees %s's output instead of the client's data",
					s.Filter, c.Policies[sp].Ref(), prev.Filter, c.Policies[pp].Ref(), where, prev.Filter))
			}
		}
	}
	for _, q := range points {
		q.Method, q.Size = filter.MethodPut, -1
		check(t.analysisResolve(q), describePoint(q))
	}
	for _, v := range volumes {
		l := t.allVol
		if x, ok := t.volumes[v]; ok {
			l = x
		}
		q := Query{Method: filter.MethodPut, Size: -1}
		where := "volume " + v
		if v == "" {
			where = "every volume"
		}
		check(t.resolve([][]*entry{l}, &q, true), where)
	}
	return ws
}

// analysisResolve is Resolve with every object condition taken as true.
func (t *Table) analysisResolve(q Query) Resolution {
	var cands []*entry
	for _, e := range t.c.entries {
		if t.active[e.pidx] && e.matches(&q) {
			cands = append(cands, e)
		}
	}
	return t.resolve([][]*entry{view(cands)}, &q, true)
}

func runsOn(in *filter.Info, m filter.Method) bool {
	if len(in.Methods) == 0 {
		return true
	}
	for _, x := range in.Methods {
		if x == m {
			return true
		}
	}
	return false
}

func describePoint(q Query) string {
	switch {
	case q.Key != "":
		return "object " + q.Tenant + "/" + q.Bucket + "/" + q.Key
	case q.Bucket != "" && q.Tenant == "":
		return "bucket " + q.Bucket
	case q.Bucket != "":
		return "bucket " + q.Tenant + "/" + q.Bucket
	case q.Tenant != "":
		return "tenant " + q.Tenant
	}
	return "every tenant"
}
