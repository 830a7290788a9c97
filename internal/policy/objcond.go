package policy

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// predKind is the kind of an object predicate node.
type predKind uint8

const (
	predAnd predKind = iota
	predOr
	predType
	predSize
	predName
	predTag
)

// objPred is an object condition compiled for per-request evaluation: no
// allocation, no map building, no parsing at request time.
type objPred struct {
	kind     predKind
	neg      bool // != for type, name and tag
	x, y     *objPred
	patterns []string // predType: ".ext" and media types
	op       CmpOp    // predSize
	size     int64
	glob     string // predName
	globKind globKind
	lit      string // the literal of a simple glob
	tagKey   string // predTag
	tagVal   string
	hasVal   bool
	text     string // the condition as written, for Explain
}

// eval reports whether the condition holds for q.
func (p *objPred) eval(q *Query) bool {
	switch p.kind {
	case predAnd:
		return p.x.eval(q) && p.y.eval(q)
	case predOr:
		return p.x.eval(q) || p.y.eval(q)
	case predType:
		return matchType(p.patterns, q.Key, q.ContentType) != p.neg
	case predSize:
		if q.Size < 0 {
			return false // unknown size: no size condition holds
		}
		return compare(q.Size, p.op, p.size)
	case predName:
		var m bool
		switch p.globKind {
		case globExact:
			m = q.Key == p.lit
		case globSuffix:
			m = strings.HasSuffix(q.Key, p.lit)
		case globPrefix:
			m = strings.HasPrefix(q.Key, p.lit)
		case globContains:
			m = strings.Contains(q.Key, p.lit)
		default:
			m = globMatch(p.glob, q.Key)
		}
		return m != p.neg
	case predTag:
		v, ok := q.Tags[p.tagKey]
		return (ok && (!p.hasVal || v == p.tagVal)) != p.neg
	}
	return false
}

// compare applies op to a and b.
func compare[T int64 | float64](a T, op CmpOp, b T) bool {
	switch op {
	case OpLT:
		return a < b
	case OpLE:
		return a <= b
	case OpGT:
		return a > b
	case OpGE:
		return a >= b
	case OpEQ:
		return a == b
	case OpNE:
		return a != b
	}
	return false
}

// andPred joins two predicates, either of which may be nil.
func andPred(x, y *objPred) *objPred {
	switch {
	case x == nil:
		return y
	case y == nil:
		return x
	}
	return &objPred{kind: predAnd, x: x, y: y, text: x.text + " AND " + y.text}
}

// compilePred turns a checked, object-only condition into a predicate.
func compilePred(c Cond) *objPred {
	switch c := c.(type) {
	case *BinaryCond:
		k := predAnd
		if c.Op == "OR" {
			k = predOr
		}
		return &objPred{kind: k, x: compilePred(c.X), y: compilePred(c.Y), text: c.String()}
	case *ObjectCmp:
		p := &objPred{neg: c.Op == OpNE, text: c.String()}
		switch c.Field {
		case FieldType:
			p.kind, p.patterns = predType, c.Patterns
		case FieldSize:
			p.kind, p.op, p.size = predSize, c.Op, c.Size
		case FieldName:
			p.kind, p.glob = predName, c.Value.Raw
			p.globKind, p.lit = classifyGlob(c.Value.Raw)
		case FieldTag:
			p.kind, p.tagKey = predTag, c.TagKey
			if c.TagValue != nil {
				p.hasVal, p.tagVal = true, c.TagValue.Raw
			}
		}
		return p
	}
	return nil
}

// globKind is the shape of a glob: most are a literal with a '*' at one
// or both ends, which a string function matches faster than globMatch.
type globKind uint8

const (
	globGeneral  globKind = iota
	globExact             // lit
	globSuffix            // *lit
	globPrefix            // lit*
	globContains          // *lit*
)

func classifyGlob(g string) (globKind, string) {
	lead, trail := strings.HasPrefix(g, "*"), len(g) > 1 && strings.HasSuffix(g, "*")
	lit := g
	if lead {
		lit = lit[1:]
	}
	if trail {
		lit = lit[:len(lit)-1]
	}
	if strings.ContainsAny(lit, "*?[\\") {
		return globGeneral, ""
	}
	switch {
	case lead && trail:
		return globContains, lit
	case lead:
		return globSuffix, lit
	case trail:
		return globPrefix, lit
	}
	return globExact, lit
}

// key identifies the predicate by what it tests, so that identical
// conditions of different policies can share one predicate.
func (p *objPred) key() string {
	switch p.kind {
	case predAnd, predOr:
		return fmt.Sprintf("(%d %s %s)", p.kind, p.x.key(), p.y.key())
	case predType:
		return fmt.Sprintf("type %v %q", p.neg, p.patterns)
	case predSize:
		return fmt.Sprintf("size %s %d", p.op, p.size)
	case predName:
		return fmt.Sprintf("name %v %q", p.neg, p.glob)
	}
	return fmt.Sprintf("tag %v %q %v %q", p.neg, p.tagKey, p.hasVal, p.tagVal)
}

// normalizePatterns makes an object type's patterns matchable: media
// types (with a '/') are kept, anything else is an extension and gets a
// leading '.'.
func normalizePatterns(pats []string) []string {
	out := make([]string, 0, len(pats))
	for _, p := range pats {
		p = strings.TrimSpace(p)
		if p == "" || p == "." {
			continue
		}
		if !strings.Contains(p, "/") && p[0] != '.' {
			p = "." + p
		}
		out = append(out, p)
	}
	return out
}

// matchType reports whether key ends with one of the extensions in
// patterns, or contentType (parameters ignored) is one of its media types;
// a media type ending in '*' matches by prefix. Case is ignored.
func matchType(patterns []string, key, contentType string) bool {
	mt := contentType
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	mt = strings.TrimSpace(mt)
	for _, p := range patterns {
		if p[0] == '.' {
			if len(key) >= len(p) && strings.EqualFold(key[len(key)-len(p):], p) {
				return true
			}
			continue
		}
		if mt == "" {
			continue
		}
		if pre, ok := strings.CutSuffix(p, "*"); ok {
			if len(mt) >= len(pre) && strings.EqualFold(mt[:len(pre)], pre) {
				return true
			}
		} else if strings.EqualFold(mt, p) {
			return true
		}
	}
	return false
}

// validGlob reports whether pattern is well formed for globMatch.
func validGlob(pattern string) error {
	for i := 0; i < len(pattern); {
		switch pattern[i] {
		case '\\':
			if i+1 >= len(pattern) {
				return errors.New("trailing '\\'")
			}
			_, w := utf8.DecodeRuneInString(pattern[i+1:])
			i += 1 + w
		case '[':
			_, next, ok := matchClass(pattern, i, 0)
			if !ok {
				return errors.New("unterminated or empty '[...]'")
			}
			i = next
		default:
			i++
		}
	}
	return nil
}

// globMatch is path.Match except that '*' and '?' also match '/': a key's
// slashes are not directory boundaries to S3. pattern must be valid.
func globMatch(pattern, name string) bool {
	px, nx := 0, 0
	starPx, starNx := -1, -1 // where to resume after a mismatch
	for px < len(pattern) || nx < len(name) {
		if px < len(pattern) {
			switch c := pattern[px]; c {
			case '*':
				starPx = px
				if nx < len(name) {
					_, w := utf8.DecodeRuneInString(name[nx:])
					starNx = nx + w
				} else {
					starNx = len(name) + 1
				}
				px++
				continue
			case '?':
				if nx < len(name) {
					_, w := utf8.DecodeRuneInString(name[nx:])
					px++
					nx += w
					continue
				}
			case '[':
				if nx < len(name) {
					r, w := utf8.DecodeRuneInString(name[nx:])
					if m, next, ok := matchClass(pattern, px, r); ok && m {
						px = next
						nx += w
						continue
					}
				}
			case '\\':
				if px+1 < len(pattern) && nx < len(name) {
					r, w := utf8.DecodeRuneInString(pattern[px+1:])
					if r2, w2 := utf8.DecodeRuneInString(name[nx:]); r == r2 {
						px += 1 + w
						nx += w2
						continue
					}
				}
			default:
				if nx < len(name) && name[nx] == c {
					px++
					nx++
					continue
				}
			}
		}
		if starPx >= 0 && starNx <= len(name) {
			// Let the star consume one more rune and go on after it.
			px, nx = starPx+1, starNx
			if nx < len(name) {
				_, w := utf8.DecodeRuneInString(name[nx:])
				starNx = nx + w
			} else {
				starNx = len(name) + 1
			}
			continue
		}
		return false
	}
	return true
}

// matchClass matches r against the class starting at pattern[i] == '['.
// It returns whether r is in the class, the offset after the class, and
// whether the class is well formed.
func matchClass(pattern string, i int, r rune) (match bool, next int, ok bool) {
	i++
	neg := false
	if i < len(pattern) && (pattern[i] == '^' || pattern[i] == '!') {
		neg = true
		i++
	}
	n := 0
	for {
		if i >= len(pattern) {
			return false, 0, false
		}
		if pattern[i] == ']' {
			if n == 0 {
				return false, 0, false
			}
			return match != neg, i + 1, true
		}
		lo, w, ok := classChar(pattern, i)
		if !ok {
			return false, 0, false
		}
		i += w
		hi := lo
		if i+1 < len(pattern) && pattern[i] == '-' && pattern[i+1] != ']' {
			if hi, w, ok = classChar(pattern, i+1); !ok || hi < lo {
				return false, 0, false
			}
			i += 1 + w
		}
		if lo <= r && r <= hi {
			match = true
		}
		n++
	}
}

func classChar(pattern string, i int) (rune, int, bool) {
	if pattern[i] == '\\' {
		if i+1 >= len(pattern) {
			return 0, 0, false
		}
		r, w := utf8.DecodeRuneInString(pattern[i+1:])
		return r, w + 1, true
	}
	r, w := utf8.DecodeRuneInString(pattern[i:])
	return r, w, true
}
