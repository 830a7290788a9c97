package sql

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

var castTypes = map[string]Kind{
	"INT": Int, "INTEGER": Int, "BIGINT": Int, "SMALLINT": Int,
	"FLOAT": Float, "REAL": Float, "DOUBLE": Float, "DECIMAL": Float, "NUMERIC": Float,
	"STRING": String, "VARCHAR": String, "CHAR": String, "TEXT": String,
	"BOOL": Bool, "BOOLEAN": Bool,
	"TIMESTAMP": Timestamp,
}

func castFailed(p pos, v Value, ty string) (Value, error) {
	return nullValue, errAt(CodeCastFailed, p, "cannot CAST %s value %q AS %s", v.K, string(v.AppendText(nil)), ty)
}

func cast(v Value, ty string, p pos) (Value, error) {
	if v.IsAbsent() {
		return v, nil
	}
	switch castTypes[ty] {
	case Int:
		switch v.K {
		case Int:
			return v, nil
		case Float:
			return NewInt(int64(v.F)), nil
		case Bool:
			return NewInt(v.I), nil
		case String:
			if i, ok := ParseIntFast(v.S); ok {
				return NewInt(i), nil
			}
			s := strings.TrimSpace(v.S)
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return NewInt(i), nil
			}
			if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
				return NewInt(int64(f)), nil
			}
		}
	case Float:
		switch v.K {
		case Int:
			return NewFloat(float64(v.I)), nil
		case Float:
			return v, nil
		case String:
			if f, err := strconv.ParseFloat(strings.TrimSpace(v.S), 64); err == nil {
				return NewFloat(f), nil
			}
		}
	case String:
		if v.K == String {
			return v, nil
		}
		return NewString(string(v.AppendText(nil))), nil
	case Bool:
		switch v.K {
		case Bool:
			return v, nil
		case Int:
			return NewBool(v.I != 0), nil
		case String:
			switch strings.ToLower(strings.TrimSpace(v.S)) {
			case "true":
				return NewBool(true), nil
			case "false":
				return NewBool(false), nil
			}
		}
	case Timestamp:
		switch v.K {
		case Timestamp:
			return v, nil
		case String:
			if t, err := ParseTimestamp(v.S); err == nil {
				return NewTime(t), nil
			}
		}
	}
	return castFailed(p, v, ty)
}

func asTime(v Value) (time.Time, bool) {
	switch v.K {
	case Timestamp:
		return v.Time(), true
	case String:
		t, err := ParseTimestamp(v.S)
		return t, err == nil
	}
	return time.Time{}, false
}

// like compiles [NOT] LIKE; a constant pattern is compiled once.
func (c *compiler) like(n *Like) (evalFn, error) {
	x, err := c.expr(n.X)
	if err != nil {
		return nil, err
	}
	esc := rune(-1)
	if n.Esc != nil {
		l, ok := n.Esc.(*Lit)
		if !ok || l.V.K != String || utf8.RuneCountInString(l.V.S) != 1 {
			return nil, errAt(CodeEvaluatorInvalidArguments, n.P, "ESCAPE takes a one-character string")
		}
		esc, _ = utf8.DecodeRuneInString(l.V.S)
	}
	not := n.Not
	if l, ok := n.Pat.(*Lit); ok && l.V.K == String {
		m, err := compileLike(l.V.S, esc)
		if err != nil {
			return nil, errAt(CodeEvaluatorInvalidArguments, n.P, "%v", err)
		}
		return func(r Row) (Value, error) {
			v, err := x(r)
			if err != nil || v.IsAbsent() {
				return nullValue, err
			}
			s := v.S
			if v.K != String {
				s = string(v.AppendText(nil))
			}
			return NewBool(m(s) != not), nil
		}, nil
	}
	pat, err := c.expr(n.Pat)
	if err != nil {
		return nil, err
	}
	p := n.P
	return func(r Row) (Value, error) {
		v, err := x(r)
		if err != nil || v.IsAbsent() {
			return nullValue, err
		}
		pv, err := pat(r)
		if err != nil || pv.IsAbsent() {
			return nullValue, err
		}
		m, err := compileLike(string(pv.AppendText(nil)), esc)
		if err != nil {
			return nullValue, errAt(CodeEvaluatorInvalidArguments, p, "%v", err)
		}
		return NewBool(m(string(v.AppendText(nil))) != not), nil
	}, nil
}

type likeTok struct {
	any  bool // %
	one  bool // _
	text string
}

// compileLike turns a LIKE pattern into a matcher, with fast paths for
// the shapes queries use most (prefix%, %suffix, %infix%, exact).
func compileLike(pat string, esc rune) (func(string) bool, error) {
	var toks []likeTok
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			toks = append(toks, likeTok{text: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(pat); {
		r, w := utf8.DecodeRuneInString(pat[i:])
		i += w
		switch {
		case r == esc:
			if i >= len(pat) {
				return nil, errLike("pattern ends with the escape character")
			}
			r2, w2 := utf8.DecodeRuneInString(pat[i:])
			i += w2
			lit.WriteRune(r2)
		case r == '%':
			flush()
			if len(toks) == 0 || !toks[len(toks)-1].any {
				toks = append(toks, likeTok{any: true})
			}
		case r == '_':
			flush()
			toks = append(toks, likeTok{one: true})
		default:
			lit.WriteRune(r)
		}
	}
	flush()
	switch {
	case len(toks) == 0:
		return func(s string) bool { return s == "" }, nil
	case len(toks) == 1 && toks[0].text != "":
		t := toks[0].text
		return func(s string) bool { return s == t }, nil
	case len(toks) == 2 && toks[0].text != "" && toks[1].any:
		t := toks[0].text
		return func(s string) bool { return strings.HasPrefix(s, t) }, nil
	case len(toks) == 2 && toks[0].any && toks[1].text != "":
		t := toks[1].text
		return func(s string) bool { return strings.HasSuffix(s, t) }, nil
	case len(toks) == 3 && toks[0].any && toks[1].text != "" && toks[2].any:
		t := toks[1].text
		return func(s string) bool { return strings.Contains(s, t) }, nil
	}
	return func(s string) bool { return likeMatch(toks, s) }, nil
}

type likeError string

func (e likeError) Error() string { return string(e) }
func errLike(s string) error      { return likeError(s) }

// likeMatch matches with backtracking on the last %: linear in practice.
func likeMatch(toks []likeTok, s string) bool {
	ti, si := 0, 0
	starT, starS := -1, 0
	for {
		if ti < len(toks) {
			t := toks[ti]
			switch {
			case t.any:
				starT, starS = ti, si
				ti++
				continue
			case t.one:
				if si < len(s) {
					_, w := utf8.DecodeRuneInString(s[si:])
					si += w
					ti++
					continue
				}
			default:
				if strings.HasPrefix(s[si:], t.text) {
					si += len(t.text)
					ti++
					continue
				}
			}
		} else if si == len(s) {
			return true
		}
		if starT < 0 || starS >= len(s) {
			return false
		}
		_, w := utf8.DecodeRuneInString(s[starS:])
		starS += w
		ti, si = starT+1, starS
	}
}

func (c *compiler) call(n *Call) (evalFn, error) {
	if aggregateNames[n.Name] {
		return c.aggregateCall(n)
	}
	args := make([]evalFn, len(n.Args))
	for i, a := range n.Args {
		f, err := c.expr(a)
		if err != nil {
			return nil, err
		}
		args[i] = f
	}
	p := n.P
	want := func(lo, hi int) error {
		if len(args) < lo || len(args) > hi {
			return errAt(CodeIncorrectSQLFunctionArgs, p, "%s takes %d to %d arguments, got %d", n.Name, lo, hi, len(args))
		}
		return nil
	}
	// eval evaluates all arguments; absent is set when one is NULL or
	// MISSING (most functions then return NULL).
	eval := func(r Row, vals []Value) (absent bool, err error) {
		for i, f := range args {
			v, err := f(r)
			if err != nil {
				return false, err
			}
			vals[i] = v
			if v.IsAbsent() {
				absent = true
			}
		}
		return absent, nil
	}
	str := func(v Value) string {
		if v.K == String {
			return v.S
		}
		return string(v.AppendText(nil))
	}
	intArg := func(v Value) (int64, error) {
		nv, ok := number(v)
		if !ok {
			return 0, errAt(CodeIncorrectSQLFunctionArgs, p, "%s wants a number, got %s", n.Name, v.K)
		}
		if nv.K == Float {
			return int64(nv.F), nil
		}
		return nv.I, nil
	}
	timeArg := func(v Value) (time.Time, error) {
		t, ok := asTime(v)
		if !ok {
			return t, errAt(CodeIncorrectSQLFunctionArgs, p, "%s wants a timestamp, got %s", n.Name, v.K)
		}
		return t, nil
	}
	simple := func(lo, hi int, f func(vals []Value) (Value, error)) (evalFn, error) {
		if err := want(lo, hi); err != nil {
			return nil, err
		}
		return func(r Row) (Value, error) {
			var buf [4]Value
			vals := buf[:len(args)]
			absent, err := eval(r, vals)
			if err != nil {
				return nullValue, err
			}
			if absent {
				return nullValue, nil
			}
			return f(vals)
		}, nil
	}
	switch n.Name {
	case "LOWER":
		return simple(1, 1, func(v []Value) (Value, error) { return NewString(strings.ToLower(str(v[0]))), nil })
	case "UPPER":
		return simple(1, 1, func(v []Value) (Value, error) { return NewString(strings.ToUpper(str(v[0]))), nil })
	case "CHAR_LENGTH", "CHARACTER_LENGTH":
		return simple(1, 1, func(v []Value) (Value, error) {
			return NewInt(int64(utf8.RuneCountInString(str(v[0])))), nil
		})
	case "SUBSTRING":
		return simple(2, 3, func(v []Value) (Value, error) {
			s := []rune(str(v[0]))
			start, err := intArg(v[1])
			if err != nil {
				return nullValue, err
			}
			end := int64(len(s)) + 1
			if len(v) == 3 {
				l, err := intArg(v[2])
				if err != nil {
					return nullValue, err
				}
				if l < 0 {
					return nullValue, errAt(CodeEvaluatorInvalidArguments, p, "SUBSTRING length %d is negative", l)
				}
				end = start + l
			}
			start = max(start, 1)
			end = min(end, int64(len(s))+1)
			if start >= end {
				return NewString(""), nil
			}
			return NewString(string(s[start-1 : end-1])), nil
		})
	case "TRIM":
		return func(r Row) (Value, error) {
			var buf [3]Value
			vals := buf[:len(args)]
			if _, err := eval(r, vals); err != nil {
				return nullValue, err
			}
			if vals[2].IsAbsent() {
				return nullValue, nil
			}
			chars := " "
			if !vals[1].IsAbsent() {
				chars = str(vals[1])
			}
			s := str(vals[2])
			switch vals[0].S {
			case "LEADING":
				s = strings.TrimLeft(s, chars)
			case "TRAILING":
				s = strings.TrimRight(s, chars)
			default:
				s = strings.Trim(s, chars)
			}
			return NewString(s), nil
		}, nil
	case "COALESCE":
		if len(args) == 0 {
			return nil, want(1, 1<<20)
		}
		return func(r Row) (Value, error) {
			for _, f := range args {
				v, err := f(r)
				if err != nil || !v.IsAbsent() {
					return v, err
				}
			}
			return nullValue, nil
		}, nil
	case "NULLIF":
		if err := want(2, 2); err != nil {
			return nil, err
		}
		return func(r Row) (Value, error) {
			a, err := args[0](r)
			if err != nil {
				return a, err
			}
			b, err := args[1](r)
			if err != nil {
				return b, err
			}
			if c, ok := compare(a, b); ok && c == 0 {
				return nullValue, nil
			}
			return a, nil
		}, nil
	case "TO_TIMESTAMP":
		return simple(1, 1, func(v []Value) (Value, error) {
			if v[0].K == Timestamp {
				return v[0], nil
			}
			t, err := ParseTimestamp(str(v[0]))
			if err != nil {
				return nullValue, errAt(CodeCastFailed, p, "TO_TIMESTAMP: %v", err)
			}
			return NewTime(t), nil
		})
	case "TO_STRING":
		return simple(2, 2, func(v []Value) (Value, error) {
			t, err := timeArg(v[0])
			if err != nil {
				return nullValue, err
			}
			s, err := formatTime(t, str(v[1]))
			if err != nil {
				return nullValue, errAt(CodeEvaluatorInvalidTimestamp, p, "TO_STRING: %v", err)
			}
			return NewString(s), nil
		})
	case "UTCNOW":
		if err := want(0, 0); err != nil {
			return nil, err
		}
		return func(Row) (Value, error) { return NewTime(time.Now().UTC()), nil }, nil
	case "EXTRACT":
		return simple(2, 2, func(v []Value) (Value, error) {
			t, err := timeArg(v[1])
			if err != nil {
				return nullValue, err
			}
			x, _ := extract(v[0].S, t)
			return NewInt(x), nil
		})
	case "DATE_ADD":
		return simple(3, 3, func(v []Value) (Value, error) {
			k, err := intArg(v[1])
			if err != nil {
				return nullValue, err
			}
			t, err := timeArg(v[2])
			if err != nil {
				return nullValue, err
			}
			nt, ok := dateAdd(v[0].S, k, t)
			if !ok {
				return nullValue, errAt(CodeEvaluatorInvalidArguments, p, "DATE_ADD cannot add %s", v[0].S)
			}
			return NewTime(nt), nil
		})
	case "DATE_DIFF":
		return simple(3, 3, func(v []Value) (Value, error) {
			a, err := timeArg(v[1])
			if err != nil {
				return nullValue, err
			}
			b, err := timeArg(v[2])
			if err != nil {
				return nullValue, err
			}
			d, ok := dateDiff(v[0].S, a, b)
			if !ok {
				return nullValue, errAt(CodeEvaluatorInvalidArguments, p, "DATE_DIFF cannot count %s", v[0].S)
			}
			return NewInt(d), nil
		})
	}
	return nil, errAt(CodeUnsupportedFunction, p, "unsupported function %s", n.Name)
}

// aggregate is one aggregate function's running state.
type aggregate struct {
	name  string
	star  bool
	arg   evalFn
	p     pos
	count int64
	isum  int64
	fsum  float64
	float bool
	best  Value
}

func (c *compiler) aggregateCall(n *Call) (evalFn, error) {
	if c.inAgg {
		return nil, errAt(CodeUnsupportedSQLStructure, n.P, "aggregate functions cannot be nested")
	}
	a := &aggregate{name: n.Name, star: n.Star, p: n.P}
	if !n.Star {
		if len(n.Args) != 1 {
			return nil, errAt(CodeIncorrectSQLFunctionArgs, n.P, "%s takes one argument", n.Name)
		}
		c.inAgg = true
		f, err := c.expr(n.Args[0])
		c.inAgg = false
		if err != nil {
			return nil, err
		}
		a.arg = f
	} else if n.Name != "COUNT" {
		return nil, errAt(CodeParseUnexpectedOperator, n.P, "only COUNT takes *")
	}
	c.prog.aggs = append(c.prog.aggs, a)
	return func(Row) (Value, error) { return a.result(), nil }, nil
}

func (a *aggregate) add(r Row) error {
	if a.star {
		a.count++
		return nil
	}
	v, err := a.arg(r)
	if err != nil || v.IsAbsent() {
		return err
	}
	switch a.name {
	case "COUNT":
		a.count++
	case "SUM", "AVG":
		nv, ok := number(v)
		if !ok {
			return errAt(CodeInvalidDataType, a.p, "%s over a non-numeric value %q", a.name, string(v.AppendText(nil)))
		}
		a.count++
		if nv.K == Float {
			if !a.float {
				a.float, a.fsum = true, float64(a.isum)
			}
			a.fsum += nv.F
		} else if a.float {
			a.fsum += float64(nv.I)
		} else {
			a.isum += nv.I
		}
	case "MIN", "MAX":
		if nv, ok := number(v); ok && v.K == String {
			v = nv
		}
		if a.count == 0 {
			a.best = v.Clone()
		} else if c, ok := compare(v, a.best); ok && (c < 0 && a.name == "MIN" || c > 0 && a.name == "MAX") {
			a.best = v.Clone()
		}
		a.count++
	}
	return nil
}

func (a *aggregate) result() Value {
	switch a.name {
	case "COUNT":
		return NewInt(a.count)
	case "SUM":
		if a.count == 0 {
			return nullValue
		}
		if a.float {
			return NewFloat(a.fsum)
		}
		return NewInt(a.isum)
	case "AVG":
		if a.count == 0 {
			return nullValue
		}
		s := a.fsum
		if !a.float {
			s = float64(a.isum)
		}
		return NewFloat(s / float64(a.count))
	}
	if a.count == 0 {
		return nullValue
	}
	return a.best
}
