package sql

import (
	"strconv"
	"strings"
)

// Node is an expression of the parse tree.
type Node interface{ position() pos }

type (
	// Lit is a literal.
	Lit struct {
		P pos
		V Value
	}
	// PathStep is one step of a path: a field name or an index.
	PathStep struct {
		Name   string
		Quoted bool // a "quoted" name matches case-sensitively
		Index  int  // when IsIndex
		IsIdx  bool
		Star   bool // [*]
	}
	// Path is a column reference: s._1, name, s.a.b[0].
	Path struct {
		P     pos
		Steps []PathStep
	}
	// Unary is NOT x or -x.
	Unary struct {
		P  pos
		Op string
		X  Node
	}
	// Binary is x op y for comparisons, AND, OR, arithmetic and ||.
	Binary struct {
		P    pos
		Op   string
		X, Y Node
	}
	// Like is x [NOT] LIKE pattern [ESCAPE esc].
	Like struct {
		P      pos
		Not    bool
		X, Pat Node
		Esc    Node
	}
	// Between is x [NOT] BETWEEN lo AND hi.
	Between struct {
		P         pos
		Not       bool
		X, Lo, Hi Node
	}
	// In is x [NOT] IN (list).
	In struct {
		P    pos
		Not  bool
		X    Node
		List []Node
	}
	// Is is x IS [NOT] NULL|MISSING|TRUE|FALSE.
	Is struct {
		P    pos
		Not  bool
		X    Node
		What string
	}
	// Call is a function call; Star marks COUNT(*). Keyword arguments
	// (EXTRACT's part, TRIM's side, CAST's type, DATE_ADD's part) are
	// string literals in Args.
	Call struct {
		P    pos
		Name string // upper case
		Args []Node
		Star bool
	}
	// Cast is CAST(x AS type).
	Cast struct {
		P    pos
		X    Node
		Type string
	}
	// Case is CASE WHEN cond THEN x ... [ELSE y] END. A simple CASE
	// (CASE v WHEN w THEN x ...) is parsed into conditions v = w.
	Case struct {
		P     pos
		Whens []Node
		Thens []Node
		Else  Node // nil: NULL
	}
)

func (n *Lit) position() pos     { return n.P }
func (n *Path) position() pos    { return n.P }
func (n *Unary) position() pos   { return n.P }
func (n *Binary) position() pos  { return n.P }
func (n *Like) position() pos    { return n.P }
func (n *Between) position() pos { return n.P }
func (n *In) position() pos      { return n.P }
func (n *Is) position() pos      { return n.P }
func (n *Call) position() pos    { return n.P }
func (n *Cast) position() pos    { return n.P }
func (n *Case) position() pos    { return n.P }

// Projection is one item of the select list.
type Projection struct {
	X     Node
	Alias string
}

// Query is a parsed SELECT.
type Query struct {
	Star  bool
	Items []Projection
	// FromPath is the path after S3Object (JSON: S3Object[*].a.b).
	FromPath []PathStep
	Alias    string
	Where    Node
	Limit    int64 // -1 when absent
}

type parser struct {
	toks []token
	i    int
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) acceptKW(kw string) bool {
	if p.peek().keyword(kw) {
		p.i++
		return true
	}
	return false
}

func (p *parser) acceptOp(o string) bool {
	if p.peek().op(o) {
		p.i++
		return true
	}
	return false
}

func (p *parser) unexpected(t token) error {
	return errAt(CodeParseUnexpectedToken, t.pos, "unexpected token %s", t)
}

func (p *parser) expectKW(kw string) error {
	if !p.acceptKW(kw) {
		t := p.peek()
		return errAt(CodeParseExpectedKeyword, t.pos, "expected keyword %s, found %s", strings.ToUpper(kw), t)
	}
	return nil
}

func (p *parser) expectOp(o string) error {
	if !p.acceptOp(o) {
		t := p.peek()
		return errAt(CodeParseExpectedTokenType, t.pos, "expected %q, found %s", o, t)
	}
	return nil
}

// reserved words cannot be bare aliases or column names.
var reserved = map[string]bool{
	"SELECT": true, "FROM": true, "WHERE": true, "LIMIT": true, "AND": true, "OR": true, "NOT": true,
	"AS": true, "LIKE": true, "ESCAPE": true, "BETWEEN": true, "IN": true, "IS": true, "NULL": true,
	"MISSING": true, "TRUE": true, "FALSE": true, "CAST": true,
	"CASE": true, "WHEN": true, "THEN": true, "ELSE": true, "END": true,
}

// Parse parses an S3 Select query.
func Parse(src string) (*Query, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	q := &Query{Limit: -1}
	if err := p.expectKW("SELECT"); err != nil {
		return nil, err
	}
	if p.acceptOp("*") {
		q.Star = true
	} else {
		for {
			x, err := p.expr()
			if err != nil {
				return nil, err
			}
			item := Projection{X: x}
			if p.acceptKW("AS") {
				t := p.next()
				if t.kind != tIdent && t.kind != tQuotedIdent && t.kind != tString {
					return nil, p.unexpected(t)
				}
				item.Alias = t.text
			} else if t := p.peek(); t.kind == tQuotedIdent || t.kind == tIdent && !reserved[strings.ToUpper(t.text)] {
				item.Alias = p.next().text
			}
			q.Items = append(q.Items, item)
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if err := p.expectKW("FROM"); err != nil {
		return nil, err
	}
	t := p.next()
	if !t.keyword("S3Object") {
		return nil, errAt(CodeParseUnexpectedToken, t.pos, "FROM must name S3Object, found %s", t)
	}
	steps, err := p.pathSteps()
	if err != nil {
		return nil, err
	}
	q.FromPath = steps
	if p.acceptKW("AS") {
		t := p.next()
		if t.kind != tIdent && t.kind != tQuotedIdent {
			return nil, p.unexpected(t)
		}
		q.Alias = t.text
	} else if t := p.peek(); t.kind == tQuotedIdent || t.kind == tIdent && !reserved[strings.ToUpper(t.text)] {
		q.Alias = p.next().text
	}
	if p.acceptKW("WHERE") {
		if q.Where, err = p.expr(); err != nil {
			return nil, err
		}
	}
	if p.acceptKW("LIMIT") {
		t := p.next()
		if t.kind != tInt {
			return nil, errAt(CodeParseExpectedNumber, t.pos, "LIMIT wants a non-negative integer, found %s", t)
		}
		n, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil {
			return nil, errAt(CodeParseExpectedNumber, t.pos, "LIMIT %s is out of range", t.text)
		}
		q.Limit = n
	}
	p.acceptOp(";")
	if t := p.peek(); t.kind != tEOF {
		return nil, p.unexpected(t)
	}
	return q, nil
}

// pathSteps reads .name, [n], ['name'] and [*] steps.
func (p *parser) pathSteps() ([]PathStep, error) {
	var steps []PathStep
	for {
		switch {
		case p.acceptOp("."):
			t := p.next()
			switch {
			case t.kind == tIdent:
				steps = append(steps, PathStep{Name: t.text})
			case t.kind == tQuotedIdent:
				steps = append(steps, PathStep{Name: t.text, Quoted: true})
			case t.op("*"):
				steps = append(steps, PathStep{Star: true})
			default:
				return nil, errAt(CodeParseInvalidPathComponent, t.pos, "invalid path component %s", t)
			}
		case p.acceptOp("["):
			t := p.next()
			switch {
			case t.kind == tInt:
				n, err := strconv.Atoi(t.text)
				if err != nil {
					return nil, errAt(CodeParseInvalidPathComponent, t.pos, "invalid index %s", t.text)
				}
				steps = append(steps, PathStep{Index: n, IsIdx: true})
			case t.kind == tString:
				steps = append(steps, PathStep{Name: t.text, Quoted: true})
			case t.op("*"):
				steps = append(steps, PathStep{Star: true})
			default:
				return nil, errAt(CodeParseInvalidPathComponent, t.pos, "invalid path component %s", t)
			}
			if err := p.expectOp("]"); err != nil {
				return nil, err
			}
		default:
			return steps, nil
		}
	}
}

func (p *parser) expr() (Node, error) { return p.or() }

func (p *parser) or() (Node, error) {
	x, err := p.and()
	for err == nil && p.peek().keyword("OR") {
		t := p.next()
		var y Node
		if y, err = p.and(); err == nil {
			x = &Binary{P: t.pos, Op: "OR", X: x, Y: y}
		}
	}
	return x, err
}

func (p *parser) and() (Node, error) {
	x, err := p.not()
	for err == nil && p.peek().keyword("AND") {
		t := p.next()
		var y Node
		if y, err = p.not(); err == nil {
			x = &Binary{P: t.pos, Op: "AND", X: x, Y: y}
		}
	}
	return x, err
}

func (p *parser) not() (Node, error) {
	if t := p.peek(); t.keyword("NOT") {
		p.next()
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		return &Unary{P: t.pos, Op: "NOT", X: x}, nil
	}
	return p.cmp()
}

func (p *parser) cmp() (Node, error) {
	x, err := p.add()
	if err != nil {
		return nil, err
	}
	t := p.peek()
	switch {
	case t.kind == tOp && (t.text == "=" || t.text == "!=" || t.text == "<>" || t.text == "<" || t.text == "<=" || t.text == ">" || t.text == ">="):
		p.next()
		y, err := p.add()
		if err != nil {
			return nil, err
		}
		op := t.text
		if op == "<>" {
			op = "!="
		}
		return &Binary{P: t.pos, Op: op, X: x, Y: y}, nil
	case t.keyword("IS"):
		p.next()
		n := &Is{P: t.pos, X: x, Not: p.acceptKW("NOT")}
		w := p.next()
		switch {
		case w.keyword("NULL"), w.keyword("MISSING"), w.keyword("TRUE"), w.keyword("FALSE"):
			n.What = strings.ToUpper(w.text)
		default:
			return nil, errAt(CodeParseExpectedKeyword, w.pos, "IS wants NULL, MISSING, TRUE or FALSE, found %s", w)
		}
		return n, nil
	}
	not := false
	if t.keyword("NOT") {
		if nt := p.toks[p.i+1]; nt.keyword("LIKE") || nt.keyword("BETWEEN") || nt.keyword("IN") {
			p.next()
			not = true
			t = p.peek()
		}
	}
	switch {
	case t.keyword("LIKE"):
		p.next()
		pat, err := p.add()
		if err != nil {
			return nil, err
		}
		n := &Like{P: t.pos, Not: not, X: x, Pat: pat}
		if p.acceptKW("ESCAPE") {
			if n.Esc, err = p.add(); err != nil {
				return nil, err
			}
		}
		return n, nil
	case t.keyword("BETWEEN"):
		p.next()
		lo, err := p.add()
		if err != nil {
			return nil, err
		}
		if err := p.expectKW("AND"); err != nil {
			return nil, err
		}
		hi, err := p.add()
		if err != nil {
			return nil, err
		}
		return &Between{P: t.pos, Not: not, X: x, Lo: lo, Hi: hi}, nil
	case t.keyword("IN"):
		p.next()
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		n := &In{P: t.pos, Not: not, X: x}
		for {
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			n.List = append(n.List, e)
			if !p.acceptOp(",") {
				break
			}
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return n, nil
	}
	return x, nil
}

func (p *parser) add() (Node, error) {
	x, err := p.mul()
	for err == nil {
		t := p.peek()
		if !(t.op("+") || t.op("-") || t.op("||")) {
			break
		}
		p.next()
		var y Node
		if y, err = p.mul(); err == nil {
			x = &Binary{P: t.pos, Op: t.text, X: x, Y: y}
		}
	}
	return x, err
}

func (p *parser) mul() (Node, error) {
	x, err := p.unary()
	for err == nil {
		t := p.peek()
		if !(t.op("*") || t.op("/") || t.op("%")) {
			break
		}
		p.next()
		var y Node
		if y, err = p.unary(); err == nil {
			x = &Binary{P: t.pos, Op: t.text, X: x, Y: y}
		}
	}
	return x, err
}

func (p *parser) unary() (Node, error) {
	t := p.peek()
	if t.op("-") || t.op("+") {
		p.next()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		if t.text == "+" {
			return x, nil
		}
		return &Unary{P: t.pos, Op: "-", X: x}, nil
	}
	return p.primary()
}

func (p *parser) primary() (Node, error) {
	t := p.next()
	switch t.kind {
	case tInt:
		i, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil {
			f, _ := strconv.ParseFloat(t.text, 64)
			return &Lit{P: t.pos, V: NewFloat(f)}, nil
		}
		return &Lit{P: t.pos, V: NewInt(i)}, nil
	case tFloat:
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil {
			return nil, errAt(CodeLexerInvalidLiteral, t.pos, "invalid number %s", t.text)
		}
		return &Lit{P: t.pos, V: NewFloat(f)}, nil
	case tString:
		return &Lit{P: t.pos, V: NewString(t.text)}, nil
	case tIonTS:
		ts, err := ParseTimestamp(t.text)
		if err != nil {
			return nil, errAt(CodeLexerInvalidLiteral, t.pos, "invalid timestamp literal `%s`", t.text)
		}
		return &Lit{P: t.pos, V: NewTime(ts)}, nil
	case tOp:
		if t.text == "(" {
			x, err := p.expr()
			if err != nil {
				return nil, err
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			return x, nil
		}
		if t.text == "*" {
			return nil, errAt(CodeParseUnexpectedOperator, t.pos, "unexpected operator *")
		}
		return nil, errAt(CodeParseExpectedExpression, t.pos, "expected an expression, found %s", t)
	case tEOF:
		return nil, errAt(CodeParseExpectedExpression, t.pos, "expected an expression, found end of input")
	case tQuotedIdent:
		steps, err := p.pathSteps()
		if err != nil {
			return nil, err
		}
		return &Path{P: t.pos, Steps: append([]PathStep{{Name: t.text, Quoted: true}}, steps...)}, nil
	}
	// An identifier: keyword literal, function call or path.
	up := strings.ToUpper(t.text)
	switch up {
	case "TRUE", "FALSE":
		return &Lit{P: t.pos, V: NewBool(up == "TRUE")}, nil
	case "NULL":
		return &Lit{P: t.pos, V: nullValue}, nil
	case "MISSING":
		return &Lit{P: t.pos, V: missingValue}, nil
	case "CAST":
		return p.cast(t)
	case "CASE":
		return p.caseExpr(t)
	}
	if reserved[up] {
		return nil, p.unexpected(t)
	}
	if p.peek().op("(") {
		return p.call(t, up)
	}
	steps, err := p.pathSteps()
	if err != nil {
		return nil, err
	}
	return &Path{P: t.pos, Steps: append([]PathStep{{Name: t.text}}, steps...)}, nil
}

func (p *parser) cast(t token) (Node, error) {
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	x, err := p.expr()
	if err != nil {
		return nil, err
	}
	if err := p.expectKW("AS"); err != nil {
		return nil, err
	}
	ty := p.next()
	if ty.kind != tIdent {
		return nil, errAt(CodeParseExpectedTokenType, ty.pos, "expected a type name, found %s", ty)
	}
	// DECIMAL(10,2) and VARCHAR(20): the precision is accepted and ignored.
	if p.acceptOp("(") {
		for !p.peek().op(")") && p.peek().kind != tEOF {
			p.next()
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return &Cast{P: t.pos, X: x, Type: strings.ToUpper(ty.text)}, nil
}

// caseExpr parses the rest of a CASE expression.
func (p *parser) caseExpr(t token) (Node, error) {
	c := &Case{P: t.pos}
	var subject Node
	if !p.peek().keyword("WHEN") {
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		subject = x
	}
	for p.acceptKW("WHEN") {
		w, err := p.expr()
		if err != nil {
			return nil, err
		}
		if subject != nil {
			w = &Binary{P: w.position(), Op: "=", X: subject, Y: w}
		}
		if err := p.expectKW("THEN"); err != nil {
			return nil, err
		}
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		c.Whens, c.Thens = append(c.Whens, w), append(c.Thens, x)
	}
	if len(c.Whens) == 0 {
		return nil, p.expectKW("WHEN")
	}
	if p.acceptKW("ELSE") {
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		c.Else = x
	}
	if err := p.expectKW("END"); err != nil {
		return nil, err
	}
	return c, nil
}

// dateParts are the keywords EXTRACT, DATE_ADD and DATE_DIFF take.
var dateParts = map[string]bool{"YEAR": true, "MONTH": true, "DAY": true, "HOUR": true, "MINUTE": true,
	"SECOND": true, "TIMEZONE_HOUR": true, "TIMEZONE_MINUTE": true}

func (p *parser) call(name token, up string) (Node, error) {
	p.next() // (
	c := &Call{P: name.pos, Name: up}
	keyword := func() (Node, error) {
		t := p.next()
		if t.kind != tIdent || !dateParts[strings.ToUpper(t.text)] {
			return nil, errAt(CodeParseExpectedKeyword, t.pos, "expected a date part (YEAR, MONTH, DAY, HOUR, MINUTE, SECOND), found %s", t)
		}
		return &Lit{P: t.pos, V: NewString(strings.ToUpper(t.text))}, nil
	}
	switch up {
	case "COUNT":
		if p.acceptOp("*") {
			c.Star = true
			return c, p.expectOp(")")
		}
	case "EXTRACT":
		part, err := keyword()
		if err != nil {
			return nil, err
		}
		if err := p.expectKW("FROM"); err != nil {
			return nil, err
		}
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		c.Args = []Node{part, x}
		return c, p.expectOp(")")
	case "DATE_ADD", "DATE_DIFF":
		part, err := keyword()
		if err != nil {
			return nil, err
		}
		c.Args = append(c.Args, part)
		for p.acceptOp(",") {
			x, err := p.expr()
			if err != nil {
				return nil, err
			}
			c.Args = append(c.Args, x)
		}
		return c, p.expectOp(")")
	case "TRIM":
		side := "BOTH"
		for _, s := range []string{"LEADING", "TRAILING", "BOTH"} {
			if p.acceptKW(s) {
				side = s
			}
		}
		var chars Node
		if !p.acceptKW("FROM") {
			x, err := p.expr()
			if err != nil {
				return nil, err
			}
			if p.acceptKW("FROM") {
				chars = x
			} else {
				c.Args = []Node{&Lit{V: NewString(side)}, &Lit{V: nullValue}, x}
				return c, p.expectOp(")")
			}
		}
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		if chars == nil {
			chars = &Lit{V: nullValue}
		}
		c.Args = []Node{&Lit{V: NewString(side)}, chars, x}
		return c, p.expectOp(")")
	case "SUBSTRING":
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		c.Args = []Node{x}
		if p.acceptKW("FROM") || p.acceptOp(",") {
			from, err := p.expr()
			if err != nil {
				return nil, err
			}
			c.Args = append(c.Args, from)
			if p.acceptKW("FOR") || p.acceptOp(",") {
				n, err := p.expr()
				if err != nil {
					return nil, err
				}
				c.Args = append(c.Args, n)
			}
		}
		return c, p.expectOp(")")
	}
	if p.acceptOp(")") {
		return c, nil
	}
	for {
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		c.Args = append(c.Args, x)
		if !p.acceptOp(",") {
			break
		}
	}
	return c, p.expectOp(")")
}
