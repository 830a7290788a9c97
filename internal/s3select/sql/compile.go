package sql

import (
	"fmt"
	"strconv"
	"strings"
)

// Row is one input record as the compiled query sees it.
type Row interface {
	// Field returns the i-th (0-based) field, or MISSING past the end.
	Field(i int) Value
	// Named returns the field called name (JSON keys), or MISSING; exact
	// asks for a case-sensitive match.
	Named(name string, exact bool) Value
	// Doc returns the whole record as one value.
	Doc() Value
}

// Schema tells the compiler how the input names its fields.
type Schema struct {
	// Positional: _1, _2... name fields by position (CSV, Parquet).
	Positional bool
	// Index resolves a column name to its position (a CSV header, a
	// Parquet schema); nil when fields are looked up by name per record
	// (JSON).
	Index func(name string, exact bool) (int, bool)
}

// evalFn computes an expression for one row.
type evalFn func(Row) (Value, error)

// Program is a compiled query: closures built once, run per record.
type Program struct {
	// Star is SELECT *.
	Star bool
	// Names are the output columns' names (aliases, last path steps, or
	// _N for unnamed expressions).
	Names []string
	// Limit is the row limit, -1 when none.
	Limit int64
	// Aggregate is set when the select list holds aggregate functions:
	// the query then yields one row, after every record was accumulated.
	Aggregate bool
	// FromPath is S3Object's path (JSON): records are the values it
	// reaches in each document.
	FromPath []PathStep
	// Fields lists the positional fields the query reads (sorted, 0-based)
	// and AllFields whether it reads every field (SELECT *, whole-record
	// references): readers use them to skip work on the rest.
	Fields    []int
	AllFields bool
	// WholeRecord is set when an expression reads the whole record (a
	// path that is only the alias): SELECT * alone does not set it.
	WholeRecord bool

	where evalFn
	projs []evalFn
	aggs  []*aggregate
	seen  map[int]bool
}

// Compile parses and compiles src against schema.
func Compile(src string, schema Schema) (*Program, error) {
	q, err := Parse(src)
	if err != nil {
		return nil, err
	}
	return CompileQuery(q, schema)
}

// CompileQuery compiles a parsed query.
func CompileQuery(q *Query, schema Schema) (*Program, error) {
	c := &compiler{q: q, schema: schema, prog: &Program{Star: q.Star, Limit: q.Limit, FromPath: q.FromPath, seen: map[int]bool{}}}
	p := c.prog
	if q.Where != nil {
		if hasAggregate(q.Where) {
			return nil, errAt(CodeUnsupportedSQLStructure, q.Where.position(), "aggregate functions are not allowed in WHERE")
		}
		w, err := c.expr(q.Where)
		if err != nil {
			return nil, err
		}
		p.where = w
	}
	if q.Star {
		p.AllFields = true
	}
	for i, it := range q.Items {
		if hasAggregate(it.X) {
			p.Aggregate = true
		}
		name := it.Alias
		if name == "" {
			name = "_" + strconv.Itoa(i+1)
			if pt, ok := it.X.(*Path); ok {
				if last := pt.Steps[len(pt.Steps)-1]; !last.IsIdx && !last.Star && len(c.stripAlias(pt.Steps)) > 0 {
					name = last.Name
				}
			}
		}
		p.Names = append(p.Names, name)
	}
	for _, it := range q.Items {
		if p.Aggregate && !hasAggregate(it.X) && !constant(it.X) {
			return nil, errAt(CodeUnsupportedSQLStructure, it.X.position(), "a select list with aggregate functions may not reference columns outside them")
		}
		c.inAgg = false
		f, err := c.expr(it.X)
		if err != nil {
			return nil, err
		}
		p.projs = append(p.projs, f)
	}
	for i := range p.seen {
		p.Fields = append(p.Fields, i)
	}
	sortInts(p.Fields)
	return p, nil
}

func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// Match runs WHERE.
func (p *Program) Match(r Row) (bool, error) {
	if p.where == nil {
		return true, nil
	}
	v, err := p.where(r)
	return v.Truthy(), err
}

// HasWhere reports whether the query filters rows.
func (p *Program) HasWhere() bool { return p.where != nil }

// Project evaluates the select list (not SELECT *) into dst.
func (p *Program) Project(r Row, dst []Value) ([]Value, error) {
	dst = dst[:0]
	for _, f := range p.projs {
		v, err := f(r)
		if err != nil {
			return dst, err
		}
		dst = append(dst, v)
	}
	return dst, nil
}

// Accumulate feeds one matching row to the aggregates.
func (p *Program) Accumulate(r Row) error {
	for _, a := range p.aggs {
		if err := a.add(r); err != nil {
			return err
		}
	}
	return nil
}

// Result evaluates an aggregate query's one output row.
func (p *Program) Result(dst []Value) ([]Value, error) {
	return p.Project(nil, dst)
}

type compiler struct {
	q      *Query
	schema Schema
	prog   *Program
	inAgg  bool
}

func constant(n Node) bool {
	switch n := n.(type) {
	case *Lit:
		return true
	case *Unary:
		return constant(n.X)
	case *Binary:
		return constant(n.X) && constant(n.Y)
	case *Cast:
		return constant(n.X)
	case *Call:
		for _, a := range n.Args {
			if !constant(a) {
				return false
			}
		}
		return !n.Star
	}
	return false
}

var aggregateNames = map[string]bool{"COUNT": true, "SUM": true, "AVG": true, "MIN": true, "MAX": true}

func hasAggregate(n Node) bool {
	switch n := n.(type) {
	case *Call:
		if aggregateNames[n.Name] {
			return true
		}
		for _, a := range n.Args {
			if hasAggregate(a) {
				return true
			}
		}
	case *Unary:
		return hasAggregate(n.X)
	case *Binary:
		return hasAggregate(n.X) || hasAggregate(n.Y)
	case *Cast:
		return hasAggregate(n.X)
	case *Like:
		return hasAggregate(n.X) || hasAggregate(n.Pat)
	case *Between:
		return hasAggregate(n.X) || hasAggregate(n.Lo) || hasAggregate(n.Hi)
	case *In:
		if hasAggregate(n.X) {
			return true
		}
		for _, a := range n.List {
			if hasAggregate(a) {
				return true
			}
		}
	case *Is:
		return hasAggregate(n.X)
	case *Case:
		for i := range n.Whens {
			if hasAggregate(n.Whens[i]) || hasAggregate(n.Thens[i]) {
				return true
			}
		}
		return n.Else != nil && hasAggregate(n.Else)
	}
	return false
}

// stripAlias drops the table alias (or S3Object) a path starts with.
func (c *compiler) stripAlias(steps []PathStep) []PathStep {
	if len(steps) > 0 && !steps[0].IsIdx && !steps[0].Star {
		first := steps[0].Name
		if c.q.Alias != "" && strings.EqualFold(first, c.q.Alias) || strings.EqualFold(first, "S3Object") {
			return steps[1:]
		}
	}
	return steps
}

func (c *compiler) expr(n Node) (evalFn, error) {
	switch n := n.(type) {
	case *Lit:
		v := n.V
		return func(Row) (Value, error) { return v, nil }, nil
	case *Path:
		return c.path(n)
	case *Unary:
		x, err := c.expr(n.X)
		if err != nil {
			return nil, err
		}
		if n.Op == "NOT" {
			return func(r Row) (Value, error) {
				v, err := x(r)
				if err != nil || v.K != Bool {
					return nullValue, err
				}
				return NewBool(v.I == 0), nil
			}, nil
		}
		return func(r Row) (Value, error) {
			v, err := x(r)
			if err != nil || v.IsAbsent() {
				return v, err
			}
			nv, ok := number(v)
			if !ok {
				return nullValue, nil
			}
			if nv.K == Int {
				return NewInt(-nv.I), nil
			}
			return NewFloat(-nv.F), nil
		}, nil
	case *Binary:
		return c.binary(n)
	case *Case:
		return c.caseExpr(n)
	case *Like:
		return c.like(n)
	case *Between:
		x, err := c.expr(n.X)
		if err != nil {
			return nil, err
		}
		lo, err := c.expr(n.Lo)
		if err != nil {
			return nil, err
		}
		hi, err := c.expr(n.Hi)
		if err != nil {
			return nil, err
		}
		not := n.Not
		return func(r Row) (Value, error) {
			v, err := x(r)
			if err != nil {
				return v, err
			}
			l, err := lo(r)
			if err != nil {
				return l, err
			}
			h, err := hi(r)
			if err != nil {
				return h, err
			}
			c1, ok1 := compare(v, l)
			c2, ok2 := compare(v, h)
			if !ok1 || !ok2 {
				return nullValue, nil
			}
			return NewBool((c1 >= 0 && c2 <= 0) != not), nil
		}, nil
	case *In:
		x, err := c.expr(n.X)
		if err != nil {
			return nil, err
		}
		list := make([]evalFn, len(n.List))
		for i, e := range n.List {
			if list[i], err = c.expr(e); err != nil {
				return nil, err
			}
		}
		not := n.Not
		return func(r Row) (Value, error) {
			v, err := x(r)
			if err != nil || v.IsAbsent() {
				return nullValue, err
			}
			for _, f := range list {
				e, err := f(r)
				if err != nil {
					return e, err
				}
				if cmp, ok := compare(v, e); ok && cmp == 0 {
					return NewBool(!not), nil
				}
			}
			return NewBool(not), nil
		}, nil
	case *Is:
		x, err := c.expr(n.X)
		if err != nil {
			return nil, err
		}
		what, not := n.What, n.Not
		return func(r Row) (Value, error) {
			v, err := x(r)
			if err != nil {
				return v, err
			}
			var res bool
			switch what {
			case "NULL":
				res = v.IsAbsent()
			case "MISSING":
				res = v.K == Missing
			case "TRUE":
				res = v.K == Bool && v.I == 1
			case "FALSE":
				res = v.K == Bool && v.I == 0
			}
			return NewBool(res != not), nil
		}, nil
	case *Cast:
		x, err := c.expr(n.X)
		if err != nil {
			return nil, err
		}
		ty, p := n.Type, n.P
		if _, ok := castTypes[ty]; !ok {
			return nil, errAt(CodeInvalidDataType, p, "unsupported CAST type %s", ty)
		}
		return func(r Row) (Value, error) {
			v, err := x(r)
			if err != nil {
				return v, err
			}
			return cast(v, ty, p)
		}, nil
	case *Call:
		return c.call(n)
	}
	return nil, fmt.Errorf("unknown node %T", n)
}

func (c *compiler) path(n *Path) (evalFn, error) {
	steps := c.stripAlias(n.Steps)
	if len(steps) == 0 {
		c.prog.AllFields, c.prog.WholeRecord = true, true
		return func(r Row) (Value, error) { return r.Doc(), nil }, nil
	}
	var base evalFn
	first := steps[0]
	switch {
	case first.IsIdx || first.Star:
		return nil, errAt(CodeParseInvalidPathComponent, n.P, "a path must start with a name")
	case c.schema.Positional && len(first.Name) > 1 && first.Name[0] == '_' && isDigits(first.Name[1:]):
		i, err := strconv.Atoi(first.Name[1:])
		if err != nil || i < 1 {
			return nil, errAt(CodeInvalidColumnIndex, n.P, "column index %s is not valid: columns are numbered from _1", first.Name)
		}
		c.prog.seen[i-1] = true
		base = func(r Row) (Value, error) { return r.Field(i - 1), nil }
	case c.schema.Index != nil:
		i, ok := c.schema.Index(first.Name, first.Quoted)
		if !ok {
			return nil, errAt(CodeMissingHeaders, n.P, "column %q is not in the input's header", first.Name)
		}
		c.prog.seen[i] = true
		base = func(r Row) (Value, error) { return r.Field(i), nil }
	case c.schema.Positional:
		return nil, errAt(CodeMissingHeaders, n.P, "column %q cannot be resolved: the input has no header (FileHeaderInfo USE names columns)", first.Name)
	default:
		name, exact := first.Name, first.Quoted
		base = func(r Row) (Value, error) { return r.Named(name, exact), nil }
	}
	rest := steps[1:]
	if len(rest) == 0 {
		return base, nil
	}
	for _, s := range rest {
		if s.Star {
			return nil, errAt(CodeParseInvalidPathComponent, n.P, "[*] is only allowed in the FROM clause")
		}
	}
	return func(r Row) (Value, error) {
		v, err := base(r)
		if err != nil {
			return v, err
		}
		return Navigate(v, rest), nil
	}, nil
}

// Navigate follows name and index steps into v.
func Navigate(v Value, steps []PathStep) Value {
	for _, s := range steps {
		switch {
		case s.IsIdx:
			l := v.ListOf()
			if v.K != List || s.Index < 0 || s.Index >= len(l) {
				return missingValue
			}
			v = l[s.Index]
		default:
			if v.K != Object {
				return missingValue
			}
			nv, ok := v.ObjOf().Get(s.Name, s.Quoted)
			if !ok {
				return missingValue
			}
			v = nv
		}
	}
	return v
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// compare orders a and b; ok is false when they are not comparable (an
// absent value, or types that do not meet), which makes the comparison
// NULL.
func compare(a, b Value) (int, bool) {
	if a.IsAbsent() || b.IsAbsent() {
		return 0, false
	}
	if a.K == String && b.K == String {
		return strings.Compare(a.S, b.S), true
	}
	if a.K == Int && b.K == Int {
		return cmpInt(a.I, b.I), true
	}
	if a.K == Timestamp || b.K == Timestamp {
		ta, ok1 := asTime(a)
		tb, ok2 := asTime(b)
		if !ok1 || !ok2 {
			return 0, false
		}
		return ta.Compare(tb), true
	}
	if a.K == Bool || b.K == Bool {
		if a.K == Bool && b.K == Bool {
			return cmpInt(a.I, b.I), true
		}
		return 0, false
	}
	na, ok1 := number(a)
	nb, ok2 := number(b)
	if !ok1 || !ok2 {
		return 0, false
	}
	if na.K == Int && nb.K == Int {
		return cmpInt(na.I, nb.I), true
	}
	fa, fb := asFloat(na), asFloat(nb)
	switch {
	case fa < fb:
		return -1, true
	case fa > fb:
		return 1, true
	}
	return 0, true
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// caseExpr compiles CASE: the value of the first THEN whose condition is
// TRUE (NULL and MISSING conditions are not), else ELSE's, else NULL.
func (c *compiler) caseExpr(n *Case) (evalFn, error) {
	whens, thens := make([]evalFn, len(n.Whens)), make([]evalFn, len(n.Thens))
	for i := range n.Whens {
		var err error
		if whens[i], err = c.expr(n.Whens[i]); err != nil {
			return nil, err
		}
		if thens[i], err = c.expr(n.Thens[i]); err != nil {
			return nil, err
		}
	}
	els := func(Row) (Value, error) { return nullValue, nil }
	if n.Else != nil {
		var err error
		if els, err = c.expr(n.Else); err != nil {
			return nil, err
		}
	}
	return func(r Row) (Value, error) {
		for i, w := range whens {
			v, err := w(r)
			if err != nil {
				return v, err
			}
			if v.K == Bool && v.I != 0 {
				return thens[i](r)
			}
		}
		return els(r)
	}, nil
}

func (c *compiler) binary(n *Binary) (evalFn, error) {
	x, err := c.expr(n.X)
	if err != nil {
		return nil, err
	}
	y, err := c.expr(n.Y)
	if err != nil {
		return nil, err
	}
	switch n.Op {
	case "AND":
		return logic(x, y, 0), nil
	case "OR":
		return logic(x, y, 1), nil
	case "=", "!=", "<", "<=", ">", ">=":
		test := cmpTests[n.Op]
		// The common shape, a column against a string constant, skips
		// the general comparison.
		if lit, ok := n.Y.(*Lit); ok && lit.V.K == String && (n.Op == "=" || n.Op == "!=") {
			s, eq := lit.V.S, n.Op == "="
			return func(r Row) (Value, error) {
				a, err := x(r)
				if err != nil {
					return a, err
				}
				if a.K == String {
					return NewBool((a.S == s) == eq), nil
				}
				c, ok := compare(a, lit.V)
				if !ok {
					return nullValue, nil
				}
				return NewBool(test(c)), nil
			}, nil
		}
		// A field against an integer constant: CSV fields are strings
		// that mostly hold plain integers.
		if lit, ok := n.Y.(*Lit); ok && lit.V.K == Int {
			iv := lit.V
			return func(r Row) (Value, error) {
				a, err := x(r)
				if err != nil {
					return a, err
				}
				if a.K == String {
					if n, ok := ParseIntFast(a.S); ok {
						return NewBool(test(cmpInt(n, iv.I))), nil
					}
				} else if a.K == Int {
					return NewBool(test(cmpInt(a.I, iv.I))), nil
				}
				c, ok := compare(a, iv)
				if !ok {
					return nullValue, nil
				}
				return NewBool(test(c)), nil
			}, nil
		}
		return func(r Row) (Value, error) {
			a, err := x(r)
			if err != nil {
				return a, err
			}
			b, err := y(r)
			if err != nil {
				return b, err
			}
			c, ok := compare(a, b)
			if !ok {
				return nullValue, nil
			}
			return NewBool(test(c)), nil
		}, nil
	case "||":
		return func(r Row) (Value, error) {
			a, err := x(r)
			if err != nil {
				return a, err
			}
			b, err := y(r)
			if err != nil {
				return b, err
			}
			if a.IsAbsent() || b.IsAbsent() {
				return nullValue, nil
			}
			return NewString(string(a.AppendText([]byte(nil))) + string(b.AppendText(nil))), nil
		}, nil
	}
	op := n.Op
	return func(r Row) (Value, error) {
		a, err := x(r)
		if err != nil {
			return a, err
		}
		b, err := y(r)
		if err != nil {
			return b, err
		}
		return arith(op, a, b), nil
	}, nil
}

// logic is AND (dominant 0: FALSE decides) and OR (dominant 1: TRUE
// decides) in three-valued logic: anything else but two booleans is NULL.
func logic(x, y evalFn, dominant int64) evalFn {
	return func(r Row) (Value, error) {
		a, err := x(r)
		if err != nil {
			return a, err
		}
		if a.K == Bool && a.I == dominant {
			return a, nil
		}
		b, err := y(r)
		if err != nil {
			return b, err
		}
		if b.K == Bool && b.I == dominant {
			return b, nil
		}
		if a.K == Bool && b.K == Bool {
			return NewBool(dominant == 0), nil
		}
		return nullValue, nil
	}
}

var cmpTests = map[string]func(int) bool{
	"=":  func(c int) bool { return c == 0 },
	"!=": func(c int) bool { return c != 0 },
	"<":  func(c int) bool { return c < 0 },
	"<=": func(c int) bool { return c <= 0 },
	">":  func(c int) bool { return c > 0 },
	">=": func(c int) bool { return c >= 0 },
}

func arith(op string, a, b Value) Value {
	na, ok1 := number(a)
	nb, ok2 := number(b)
	if !ok1 || !ok2 {
		return nullValue
	}
	if na.K == Int && nb.K == Int {
		if v, ok := arithOf(op, na.I, nb.I, func(x, y int64) int64 { return x % y }); ok {
			return NewInt(v)
		}
		return nullValue
	}
	if v, ok := arithOf(op, asFloat(na), asFloat(nb), func(x, y float64) float64 { return x - y*float64(int64(x/y)) }); ok {
		return NewFloat(v)
	}
	return nullValue
}

// arithOf applies op; division and remainder by zero are NULL (ok false).
func arithOf[T int64 | float64](op string, x, y T, mod func(T, T) T) (T, bool) {
	switch op {
	case "+":
		return x + y, true
	case "-":
		return x - y, true
	case "*":
		return x * y, true
	case "/", "%":
		if y == 0 {
			return 0, false
		}
		if op == "%" {
			return mod(x, y), true
		}
		return x / y, true
	}
	return 0, false
}

// HasAggregates reports whether the select list uses aggregate functions.
func (q *Query) HasAggregates() bool {
	for _, it := range q.Items {
		if hasAggregate(it.X) {
			return true
		}
	}
	return false
}
