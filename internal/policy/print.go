package policy

import (
	"strings"
	"unicode/utf8"
)

// String renders the policy in canonical DSL form on one line. Parsing
// the result gives the same policy (positions aside).
func (p *Policy) String() string {
	var b strings.Builder
	if p.Name != "" {
		name := quoteName(p.Name)
		if _, ok := targetKind(strings.ToUpper(name)); ok || strings.EqualFold(name, "ALL") {
			name = `"` + name + `"` // a bare target keyword before ':' reads as a missing FOR
		}
		b.WriteString(name)
		b.WriteString(": ")
	}
	b.WriteString("FOR ")
	for i, t := range p.Targets {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(t.String())
	}
	if p.Context != "" {
		b.WriteString(" CONTEXT ")
		b.WriteString(quoteName(p.Context))
	}
	if p.When != nil {
		b.WriteString(" WHEN ")
		b.WriteString(p.When.String())
	}
	b.WriteString(" DO ")
	for i, a := range p.Actions {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.String())
	}
	if len(p.To) > 0 {
		b.WriteString(" TO ")
		for i, o := range p.To {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(o.String())
		}
	}
	return b.String()
}

// String renders the target as written (TENANT t1, CONTAINER t1/c1, ALL TENANTS).
func (t *Target) String() string {
	if t.Kind == TargetAll {
		if t.ScopeWord != "" {
			return "ALL " + t.ScopeWord
		}
		return "ALL"
	}
	if t.Keyword == "G" {
		return "G:" + quoteName(t.Name) // Crystal's spelling; "G 1" reads oddly
	}
	return t.Keyword + " " + quoteName(t.Name)
}

// String renders the condition with the parentheses its structure needs:
// an OR under an AND, and a binary right operand (the parser associates
// to the left), so that the rendering parses back to the same tree.
func (c *BinaryCond) String() string {
	x := c.X.String()
	if b, ok := c.X.(*BinaryCond); ok && c.Op == "AND" && b.Op == "OR" {
		x = "(" + x + ")"
	}
	y := c.Y.String()
	if _, ok := c.Y.(*BinaryCond); ok {
		y = "(" + y + ")"
	}
	return x + " " + c.Op + " " + y
}

// String renders the comparison.
func (c *MetricCmp) String() string {
	return c.Metric + " " + string(c.Op) + " " + c.Value.String()
}

// String renders the comparison.
func (c *ObjectCmp) String() string {
	s := string(c.Field) + string(c.Op) + c.Value.String()
	if c.TagValue != nil {
		s += ":" + c.TagValue.String()
	}
	return s
}

// String renders the value, quoted when it must be.
func (v Value) String() string {
	if v.Number {
		return v.Raw
	}
	return quoteName(v.Raw)
}

// String renders the action.
func (a *Action) String() string {
	var b strings.Builder
	b.WriteString(string(a.Verb))
	b.WriteByte(' ')
	b.WriteString(quoteName(a.Filter))
	for i, p := range a.Params {
		if i == 0 {
			b.WriteString(" WITH ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(quoteName(p.Name))
		b.WriteByte('=')
		b.WriteString(p.Value.String())
	}
	if a.StageWord != "" {
		b.WriteString(" ON ")
		b.WriteString(quoteName(a.StageWord))
	}
	if a.Mode != ModeDefault {
		b.WriteByte(' ')
		b.WriteString(string(a.Mode))
	}
	if a.Callable {
		b.WriteString(" CALLABLE")
	}
	return b.String()
}

// quoteName returns s as a word when it lexes as one and is not a
// reserved keyword, else as a double-quoted string.
func quoteName(s string) string {
	if s != "" && !isReserved(strings.ToUpper(s)) && utf8.ValidString(s) {
		word := true
		for _, r := range s {
			if !isWordRune(r) {
				word = false
				break
			}
		}
		if word {
			return s
		}
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r == '"' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}
