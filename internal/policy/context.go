package policy

import "regexp"

// classRE is a request class name, as internal/flowctx defines it.
var classRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// context checks CONTEXT: a request class, named only by bandwidth SLOs
// (flows are tenant × class; filters and volume throttles have no class).
func (c *checker) context() {
	p := c.p
	if p.Context == "" && p.ContextPos == 0 {
		return
	}
	if !classRE.MatchString(p.Context) {
		c.errorf(p.ContextPos, "", "request class %q: want 1-63 characters [a-z0-9][a-z0-9_.-]*", p.Context)
	}
	for _, a := range p.Actions {
		if a.SLO != SLOBandwidth {
			c.errorf(a.FilterPos, "", "CONTEXT names a request class: only SET/DELETE bandwidth apply to one, not %s", a.Filter)
		}
	}
}
