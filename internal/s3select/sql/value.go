// Package sql owns the S3 Select SQL dialect: its lexer, parser, the
// expression tree, and the compiler that turns a query into closures run
// once per record. It knows nothing about input or output formats: rows
// reach it through the Row interface and values leave it as Value.
package sql

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Kind is a value's type.
type Kind uint8

// The kinds. Missing is PartiQL's absent value (a JSON key that is not
// there, a CSV column beyond the record's end); Null is an explicit null.
const (
	Missing Kind = iota
	Null
	Bool
	Int
	Float
	String
	Timestamp
	List
	Object
)

func (k Kind) String() string {
	return [...]string{"MISSING", "NULL", "BOOL", "INT", "FLOAT", "STRING", "TIMESTAMP", "LIST", "STRUCT"}[k]
}

// Value is one SQL value. It is passed by value: strings may alias an
// input buffer that is only valid until the next record (Clone copies).
type Value struct {
	K Kind
	I int64 // Int; Bool (0/1)
	F float64
	S string
	// X holds a Timestamp's time.Time, a List's []Value or an Object's
	// *Obj.
	X any
}

// Obj is a JSON object: keys in document order.
type Obj struct {
	Keys []string
	Vals []Value
}

// Get returns the value of key, matching exactly first and then, unless
// exact is set, ignoring case.
func (o *Obj) Get(key string, exact bool) (Value, bool) {
	for i, k := range o.Keys {
		if k == key {
			return o.Vals[i], true
		}
	}
	if !exact {
		for i, k := range o.Keys {
			if strings.EqualFold(k, key) {
				return o.Vals[i], true
			}
		}
	}
	return Value{}, false
}

// Constructors.
func NewInt(i int64) Value      { return Value{K: Int, I: i} }
func NewFloat(f float64) Value  { return Value{K: Float, F: f} }
func NewString(s string) Value  { return Value{K: String, S: s} }
func NewTime(t time.Time) Value { return Value{K: Timestamp, X: t} }
func NewList(l []Value) Value   { return Value{K: List, X: l} }
func NewObject(o *Obj) Value    { return Value{K: Object, X: o} }
func NewBool(b bool) Value {
	if b {
		return Value{K: Bool, I: 1}
	}
	return Value{K: Bool}
}

var (
	nullValue    = Value{K: Null}
	missingValue = Value{K: Missing}
)

// IsAbsent reports NULL or MISSING.
func (v Value) IsAbsent() bool { return v.K <= Null }

// Time returns a Timestamp's time.
func (v Value) Time() time.Time { t, _ := v.X.(time.Time); return t }

// ListOf returns a List's elements.
func (v Value) ListOf() []Value { l, _ := v.X.([]Value); return l }

// ObjOf returns an Object's fields.
func (v Value) ObjOf() *Obj { o, _ := v.X.(*Obj); return o }

// Clone copies any string that may alias an input buffer, so the value
// can outlive the current record.
func (v Value) Clone() Value {
	if v.K == String {
		v.S = strings.Clone(v.S)
	}
	return v
}

// Truthy is how WHERE reads a value: only TRUE passes.
func (v Value) Truthy() bool { return v.K == Bool && v.I != 0 }

// AppendText appends v as CSV output text (no quoting).
func (v Value) AppendText(b []byte) []byte {
	switch v.K {
	case Missing, Null:
		return b
	case Bool:
		if v.I != 0 {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case Int:
		return strconv.AppendInt(b, v.I, 10)
	case Float:
		return AppendFloat(b, v.F)
	case String:
		return append(b, v.S...)
	case Timestamp:
		return appendTime(b, v.Time())
	case List, Object:
		return v.AppendJSON(b)
	}
	return b
}

// AppendFloat formats f the shortest way that reads back the same.
func AppendFloat(b []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return strconv.AppendFloat(b, f, 'g', -1, 64)
	}
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		return strconv.AppendFloat(b, f, 'g', -1, 64)
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

func appendTime(b []byte, t time.Time) []byte {
	if t.Nanosecond() != 0 {
		return t.AppendFormat(b, "2006-01-02T15:04:05.999999999Z07:00")
	}
	return t.AppendFormat(b, "2006-01-02T15:04:05Z07:00")
}

// AppendJSON appends v as a JSON value.
func (v Value) AppendJSON(b []byte) []byte {
	switch v.K {
	case Missing, Null:
		return append(b, "null"...)
	case Bool, Int:
		return v.AppendText(b)
	case Float:
		if math.IsInf(v.F, 0) || math.IsNaN(v.F) {
			return append(b, "null"...)
		}
		return AppendFloat(b, v.F)
	case String:
		return AppendJSONString(b, v.S)
	case Timestamp:
		b = append(b, '"')
		b = appendTime(b, v.Time())
		return append(b, '"')
	case List:
		b = append(b, '[')
		for i, e := range v.ListOf() {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.AppendJSON(b)
		}
		return append(b, ']')
	case Object:
		o := v.ObjOf()
		b = append(b, '{')
		first := true
		for i, k := range o.Keys {
			if o.Vals[i].K == Missing {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = AppendJSONString(b, k)
			b = append(b, ':')
			b = o.Vals[i].AppendJSON(b)
		}
		return append(b, '}')
	}
	return b
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a quoted JSON string.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// number reads v as a number: Int and Float as they are, a String that
// parses as one. ok is false otherwise.
func number(v Value) (Value, bool) {
	switch v.K {
	case Int, Float:
		return v, true
	case String:
		if i, ok := ParseIntFast(v.S); ok {
			return NewInt(i), true
		}
		s := strings.TrimSpace(v.S)
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return NewInt(i), true
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return NewFloat(f), true
		}
	}
	return Value{}, false
}

func asFloat(v Value) float64 {
	if v.K == Int {
		return float64(v.I)
	}
	return v.F
}

// ParseIntFast reads a plain decimal integer of at most 18 digits, the
// common case of a CSV field, without strconv's generality.
func ParseIntFast(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	i, neg := 0, false
	if s[0] == '-' || s[0] == '+' {
		if len(s) == 1 {
			return 0, false
		}
		neg, i = s[0] == '-', 1
	}
	var n int64
	for ; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		n = n*10 + int64(c)
	}
	if neg {
		n = -n
	}
	return n, true
}
