package policy

import (
	"fmt"
	"strings"

	"github.com/facet-sds/facet/internal/filter"
)

// maxNesting bounds parentheses in a condition, so that hostile input
// cannot recurse deep.
const maxNesting = 64

// Parse parses text, which holds zero or more policies, one per line (see
// the package documentation for comments and continuation lines). name
// prefixes error positions; it may be empty. Parse stops at the first
// error and returns it as an *Error.
func Parse(name, text string) (policies []*Policy, err error) {
	p := &parser{src: &source{name: name, text: text}, lex: lex(text)}
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(parseError)
			if !ok {
				panic(r)
			}
			policies, err = nil, pe.err
		}
	}()
	for {
		switch p.peek().typ {
		case itemEOF:
			return policies, nil
		case itemNewline:
			p.next()
			continue
		}
		pol := p.policy()
		policies = append(policies, pol)
		switch t := p.next(); t.typ {
		case itemEOF:
			return policies, nil
		case itemNewline:
		default:
			p.unexpectedAfterPolicy(pol, t)
		}
	}
}

// parseError carries an *Error up the recursive descent to Parse.
type parseError struct{ err *Error }

type parser struct {
	src     *source
	lex     *lexer
	buf     []item // lookahead
	lastEnd Pos    // end of the last consumed item
	depth   int    // parentheses open
}

func (p *parser) peekN(n int) item {
	for len(p.buf) <= n {
		it := p.lex.nextItem()
		if it.typ == itemError {
			p.errorf(it.pos, "", "%s", it.val)
		}
		p.buf = append(p.buf, it)
	}
	return p.buf[n]
}

func (p *parser) peek() item { return p.peekN(0) }

func (p *parser) next() item {
	it := p.peek()
	p.buf = p.buf[1:]
	if it.typ != itemEOF && it.typ != itemNewline {
		p.lastEnd = it.end
	}
	return it
}

func (p *parser) errorf(pos Pos, suggestion, format string, args ...any) {
	panic(parseError{newError(p.src, pos, suggestion, format, args...)})
}

// upper returns a word's keyword spelling, or "" for other items.
func upper(it item) string {
	if it.typ != itemWord {
		return ""
	}
	return strings.ToUpper(it.val)
}

func isKw(it item, kw string) bool { return it.typ == itemWord && strings.EqualFold(it.val, kw) }

// isReserved reports whether an upper-cased word is a structural keyword,
// which cannot be a name unless quoted.
func isReserved(u string) bool {
	switch u {
	case "FOR", "WHEN", "DO", "TO", "SET", "DELETE", "WITH", "ON", "AND", "OR",
		"TRANSIENT", "PERSISTENT", "CALLABLE":
		return true
	}
	return false
}

// targetKinds maps target keywords to kinds.
func targetKind(u string) (TargetKind, bool) {
	switch u {
	case "TENANT":
		return TargetTenant, true
	case "BUCKET", "CONTAINER":
		return TargetBucket, true
	case "OBJECT":
		return TargetObject, true
	case "GROUP", "G":
		return TargetGroup, true
	case "VOLUME":
		return TargetVolume, true
	}
	return 0, false
}

var targetKeywords = []string{"TENANT", "BUCKET", "CONTAINER", "OBJECT", "GROUP", "G", "VOLUME", "ALL"}

// describe names an item for messages.
func (p *parser) describe(it item) string {
	switch it.typ {
	case itemEOF:
		return "end of input"
	case itemNewline:
		return "end of line"
	case itemWord:
		if u := upper(it); isReserved(u) {
			return "keyword " + u
		}
		return fmt.Sprintf("%q", it.val)
	case itemNumber:
		return it.val
	case itemString:
		return p.src.text[it.pos:it.end]
	case itemOp:
		return "'" + it.val + "'"
	}
	return "'" + p.src.text[it.pos:it.end] + "'"
}

// suggestKw suggests one of kws for a mistyped word.
func suggestKw(it item, kws ...string) string {
	if it.typ != itemWord || isReserved(upper(it)) {
		return ""
	}
	return suggest(it.val, kws)
}

func (p *parser) policy() *Policy {
	start := p.peek()
	pol := &Policy{Pos: start.pos, src: p.src}
	pol.Line = 1 + strings.Count(p.src.text[:start.pos], "\n")
	if (start.typ == itemWord || start.typ == itemNumber || start.typ == itemString) && p.peekN(1).typ == itemColon {
		u := upper(start)
		if _, ok := targetKind(u); ok || u == "ALL" {
			p.errorf(start.pos, "", "missing FOR before %s", u)
		}
		if isReserved(u) {
			p.errorf(start.pos, "", "a policy name cannot be the keyword %s unless quoted", u)
		}
		if start.val == "" {
			p.errorf(start.pos, "", "a policy name cannot be empty")
		}
		pol.Name, pol.NamePos = start.val, start.pos
		p.next()
		p.next()
	}
	t := p.next()
	if !isKw(t, "FOR") {
		u := upper(t)
		if _, ok := targetKind(u); ok || u == "ALL" {
			p.errorf(t.pos, "", "missing FOR before %s", u)
		}
		p.errorf(t.pos, suggestKw(t, "FOR"), "expected FOR, found %s", p.describe(t))
	}
	pol.Targets = p.targets()
	if c := p.peek(); isKw(c, "CONTEXT") {
		p.next()
		n := p.ident("a request class (CONTEXT compaction)")
		pol.Context, pol.ContextPos = n.val, n.pos
	}
	switch t := p.next(); {
	case isKw(t, "WHEN"):
		pol.When = p.cond()
		d := p.next()
		switch {
		case isKw(d, "DO"):
		case d.typ == itemComma:
			p.errorf(d.pos, "", "conditions are joined with AND or OR, not ','")
		case d.typ == itemRParen:
			p.errorf(d.pos, "", "unexpected ')' with no '(' to close")
		default:
			p.errorf(d.pos, suggestKw(d, "DO"), "expected DO, found %s", p.describe(d))
		}
	case isKw(t, "DO"):
	default:
		p.errorf(t.pos, suggestKw(t, "WHEN", "DO"), "expected WHEN or DO after the targets, found %s", p.describe(t))
	}
	pol.Actions = p.actions()
	if to := p.peek(); isKw(to, "TO") {
		p.next()
		pol.ToPos = to.pos
		for {
			pol.To = append(pol.To, p.cmp(true).(*ObjectCmp))
			if n := p.peek(); n.typ == itemComma || isKw(n, "AND") {
				p.next()
				continue
			}
			break
		}
	}
	pol.Text = p.src.text[pol.Pos:p.lastEnd]
	return pol
}

// unexpectedAfterPolicy explains what is wrong with t, found where a
// policy should have ended.
func (p *parser) unexpectedAfterPolicy(pol *Policy, t item) {
	u := upper(t)
	switch {
	case u == "WHEN":
		p.errorf(t.pos, "", "WHEN must come before DO")
	case u == "TO" && pol.To != nil:
		p.errorf(t.pos, "", "only one TO clause is allowed")
	case u == "SET" || u == "DELETE":
		p.errorf(t.pos, "", "missing ',' before %s", u)
	case u == "WITH" || u == "ON" || u == "TRANSIENT" || u == "PERSISTENT" || u == "CALLABLE":
		p.errorf(t.pos, "", "%s belongs to an action and must come before TO", u)
	}
	p.errorf(t.pos, suggestKw(t, "TO"), "expected end of policy, found %s", p.describe(t))
}

func (p *parser) targets() []*Target {
	ts := []*Target{p.target()}
	for p.peek().typ == itemComma {
		p.next()
		ts = append(ts, p.target())
	}
	return ts
}

func (p *parser) target() *Target {
	t := p.next()
	u := upper(t)
	if u == "ALL" {
		tg := &Target{Pos: t.pos, Kind: TargetAll, Keyword: "ALL", Scope: TargetTenant}
		if n := p.peek(); n.typ == itemWord {
			switch upper(n) {
			case "TENANTS", "TENANT":
				tg.Scope = TargetTenant
			case "BUCKETS", "BUCKET", "CONTAINERS", "CONTAINER":
				tg.Scope = TargetBucket
			case "VOLUMES", "VOLUME":
				tg.Scope = TargetVolume
			default:
				return tg
			}
			tg.ScopeWord = upper(n)
			p.next()
		}
		return tg
	}
	kind, ok := targetKind(u)
	if !ok {
		sug := suggestKw(t, targetKeywords...)
		if sug == "" && (t.typ == itemWord && !isReserved(u) || t.typ == itemNumber) {
			sug = "TENANT " + t.val
		}
		p.errorf(t.pos, sug, "expected a target (TENANT, BUCKET, CONTAINER, OBJECT, GROUP, G, VOLUME or ALL), found %s", p.describe(t))
	}
	tg := &Target{Pos: t.pos, Kind: kind, Keyword: u}
	if p.peek().typ == itemColon {
		p.next()
	}
	var what string
	switch kind {
	case TargetTenant:
		what = "a tenant name"
	case TargetBucket:
		what = "a bucket (TENANT/BUCKET or BUCKET)"
	case TargetObject:
		what = "an object (TENANT/BUCKET/KEY)"
	case TargetGroup:
		what = "a group name"
	case TargetVolume:
		what = "a volume name"
	}
	n := p.ident(what)
	tg.Name, tg.NamePos = n.val, n.pos
	return tg
}

// ident reads a name: a word that is not reserved, a number or a
// non-empty string.
func (p *parser) ident(what string) item {
	t := p.next()
	switch t.typ {
	case itemWord:
		if u := upper(t); isReserved(u) {
			p.errorf(t.pos, "", "expected %s, found keyword %s", what, u)
		}
		return t
	case itemNumber:
		return t
	case itemString:
		if t.val == "" {
			p.errorf(t.pos, "", "expected %s, found an empty string", what)
		}
		return t
	}
	p.errorf(t.pos, "", "expected %s, found %s", what, p.describe(t))
	return t
}

func (p *parser) value(what string) Value {
	t := p.ident(what)
	return Value{Pos: t.pos, Raw: t.val, Quoted: t.typ == itemString, Number: t.typ == itemNumber}
}

func (p *parser) cond() Cond {
	x := p.conj()
	for isKw(p.peek(), "OR") {
		op := p.next()
		x = &BinaryCond{Op: "OR", OpPos: op.pos, X: x, Y: p.conj()}
	}
	return x
}

func (p *parser) conj() Cond {
	x := p.term()
	for isKw(p.peek(), "AND") {
		op := p.next()
		x = &BinaryCond{Op: "AND", OpPos: op.pos, X: x, Y: p.term()}
	}
	return x
}

func (p *parser) term() Cond {
	if t := p.peek(); t.typ == itemLParen {
		p.next()
		if p.depth++; p.depth > maxNesting {
			p.errorf(t.pos, "", "conditions nest too deeply (more than %d parentheses)", maxNesting)
		}
		c := p.cond()
		p.depth--
		if r := p.next(); r.typ != itemRParen {
			p.errorf(r.pos, "", "expected ')', found %s", p.describe(r))
		}
		return c
	}
	return p.cmp(false)
}

var objectFields = []string{string(FieldType), string(FieldSize), string(FieldName), string(FieldTag)}

// cmp reads one comparison; in a TO clause only object comparisons.
func (p *parser) cmp(toClause bool) Cond {
	t := p.next()
	u := upper(t)
	if t.typ != itemWord || isReserved(u) {
		if toClause {
			p.errorf(t.pos, "", "expected an object condition (OBJECT_TYPE, OBJECT_SIZE, OBJECT_NAME or OBJECT_TAG), found %s", p.describe(t))
		}
		p.errorf(t.pos, "", "expected a condition (a metric, OBJECT_TYPE, OBJECT_SIZE, OBJECT_NAME or OBJECT_TAG), found %s", p.describe(t))
	}
	switch ObjectField(u) {
	case FieldType, FieldSize, FieldName, FieldTag:
		return p.objectCmp(t, ObjectField(u))
	}
	if toClause {
		p.errorf(t.pos, suggest(t.val, objectFields), "TO takes object conditions (OBJECT_TYPE, OBJECT_SIZE, OBJECT_NAME or OBJECT_TAG), found %q; metric conditions go in WHEN", t.val)
	}
	c := &MetricCmp{Pos: t.pos, Metric: t.val}
	c.Op, c.OpPos = p.op(t.val)
	v := p.next()
	if v.typ != itemNumber {
		p.errorf(v.pos, "", "expected a number after %s %s, found %s", t.val, c.Op, p.describe(v))
	}
	c.Value = Value{Pos: v.pos, Raw: v.val, Number: true}
	return c
}

func (p *parser) op(after string) (CmpOp, Pos) {
	t := p.next()
	if t.typ != itemOp {
		p.errorf(t.pos, "", "expected a comparison (<, <=, >, >=, =, !=) after %s, found %s", after, p.describe(t))
	}
	return CmpOp(t.val), t.pos
}

func (p *parser) objectCmp(t item, field ObjectField) *ObjectCmp {
	c := &ObjectCmp{Pos: t.pos, Field: field}
	c.Op, c.OpPos = p.op(string(field))
	if field == FieldSize {
		v := p.next()
		if v.typ != itemNumber {
			p.errorf(v.pos, "", "expected a size after OBJECT_SIZE %s, found %s", c.Op, p.describe(v))
		}
		c.Value = Value{Pos: v.pos, Raw: v.val, Number: true}
		return c
	}
	if c.Op != OpEQ && c.Op != OpNE {
		p.errorf(c.OpPos, "", "%s takes = or !=, not %s", field, c.Op)
	}
	switch field {
	case FieldType:
		c.Value = p.value("an object type such as DOCS")
	case FieldName:
		c.Value = p.value("a name pattern such as *.log")
	case FieldTag:
		c.Value = p.value("a tag key (k or k:v)")
		if p.peek().typ == itemColon {
			p.next()
			v := p.value("a tag value after ':'")
			c.TagValue = &v
		}
	}
	return c
}

func (p *parser) actions() []*Action {
	as := []*Action{p.action()}
	for p.peek().typ == itemComma {
		p.next()
		n := p.peek()
		if !isKw(n, "SET") && !isKw(n, "DELETE") {
			sug := ""
			if n.typ == itemWord && !isReserved(upper(n)) {
				sug = "SET " + n.val
			}
			p.errorf(n.pos, sug, "expected SET or DELETE after ',', found %s", p.describe(n))
		}
		as = append(as, p.action())
	}
	return as
}

// optionRank orders an action's optional clauses.
func optionRank(u string) int {
	switch u {
	case "WITH":
		return 1
	case "ON":
		return 2
	case "TRANSIENT", "PERSISTENT":
		return 3
	case "CALLABLE":
		return 4
	}
	return 0
}

func (p *parser) action() *Action {
	t := p.next()
	a := &Action{Pos: t.pos}
	switch upper(t) {
	case "SET":
		a.Verb = VerbSet
	case "DELETE":
		a.Verb = VerbDelete
	default:
		sug := suggestKw(t, "SET", "DELETE")
		if sug == "" && t.typ == itemWord && !isReserved(upper(t)) {
			sug = "SET " + t.val
		}
		p.errorf(t.pos, sug, "expected SET or DELETE, found %s", p.describe(t))
	}
	f := p.ident("a filter name")
	a.Filter, a.FilterPos = f.val, f.pos
	var given []item // the optional clauses, in the order read
	if w := p.peek(); isKw(w, "WITH") {
		given = append(given, p.next())
		a.WithPos = w.pos
		a.Params = append(a.Params, p.param())
		for p.peek().typ == itemComma && p.isParamStart() {
			p.next()
			a.Params = append(a.Params, p.param())
		}
	}
	if on := p.peek(); isKw(on, "ON") {
		given = append(given, p.next())
		s := p.ident("a stage (gateway, storage, proxy or object)")
		a.StageWord, a.StagePos = s.val, s.pos
		switch strings.ToLower(s.val) {
		case "gateway", "proxy":
			a.Stage = filter.StageGateway
		case "storage", "object":
			a.Stage = filter.StageStorage
		default:
			p.errorf(s.pos, suggest(s.val, []string{"gateway", "storage", "proxy", "object"}),
				"unknown stage %q: the stages are gateway (alias proxy) and storage (alias object)", s.val)
		}
	}
	if m := p.peek(); isKw(m, "TRANSIENT") || isKw(m, "PERSISTENT") {
		given = append(given, p.next())
		a.Mode, a.ModePos = Mode(upper(m)), m.pos
	}
	if c := p.peek(); isKw(c, "CALLABLE") {
		given = append(given, p.next())
		a.Callable, a.CallPos = true, c.pos
	}
	n := p.peek()
	if r := optionRank(upper(n)); r > 0 {
		// n was not read, so a clause of rank >= r was already given.
		for _, g := range given {
			gr, gu := optionRank(upper(g)), upper(g)
			switch {
			case gr == r && gu == upper(n):
				p.errorf(n.pos, "", "%s given twice in one action", gu)
			case gr == r:
				p.errorf(n.pos, "", "%s and %s cannot both be given", gu, upper(n))
			case gr > r:
				p.errorf(n.pos, "", "%s must come before %s in an action (SET filter [WITH ...] [ON stage] [TRANSIENT|PERSISTENT] [CALLABLE])", upper(n), gu)
			}
		}
	}
	return a
}

// isParamStart reports whether the ',' at peek starts another parameter
// (name '=') rather than another action.
func (p *parser) isParamStart() bool {
	n := p.peekN(1)
	if !(n.typ == itemWord && !isReserved(upper(n)) || n.typ == itemString) {
		return false
	}
	eq := p.peekN(2)
	return eq.typ == itemOp && eq.val == "="
}

func (p *parser) param() *Param {
	n := p.ident("a parameter name")
	if n.typ == itemNumber {
		p.errorf(n.pos, "", "expected a parameter name, found %s", n.val)
	}
	eq := p.next()
	if eq.typ != itemOp || eq.val != "=" {
		p.errorf(eq.pos, "", "expected '=' after parameter %s, found %s", n.val, p.describe(eq))
	}
	return &Param{Pos: n.pos, Name: n.val, Value: p.value("a value for " + n.val)}
}
