// Package flowctx owns application context and request classes (PAIO, FAST 2022:
// context propagation): a request says what it is part of in the
// x-facet-context header ("workflow=etl-42; class=compaction"), a tenant may
// map requests to classes by rules (key prefix, user agent, metadata), and
// each request is classified into one class of its tenant, so that flows
// become tenant × class. It also owns the enforcement of per-class
// bandwidth (limits from policies naming a CONTEXT) and the SILK-like
// priority controller that gives background classes only the bandwidth the
// foreground leaves.
package flowctx

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/facet-sds/facet/internal/qos"
)

// Header is the request header that carries application context.
const Header = "X-Facet-Context"

// DefaultClass is the class of a request that names none, of a tenant
// without a default.
const DefaultClass = "default"

// Limits of the header, so that parsing a hostile one costs little.
const (
	maxHeader   = 512
	maxPairs    = 8
	maxKey      = 32
	maxValue    = 128
	maxClassLen = 63
)

// ErrMalformed is wrapped by every parse error.
var ErrMalformed = errors.New("malformed x-facet-context")

// Pair is one key=value of the header beyond class and workflow.
type Pair struct {
	Key, Value string
}

// Context is the application context a request carries.
type Context struct {
	// Class is the request class the application asks for; "" when the
	// header names none (rules or the tenant's default decide).
	Class string
	// Workflow groups requests of one job (an ETL run, a compaction).
	Workflow string
	// Other holds the remaining pairs, in order.
	Other []Pair
}

// Parse reads an x-facet-context value: pairs key=value separated by ';'
// (spaces around them ignored, a trailing ';' allowed). Keys are lower-case
// [a-z][a-z0-9_-]*, values 1-128 characters of [A-Za-z0-9._:/+@-], each key
// at most once; class must be a valid class name. The error says what is
// wrong and where, in words a client's developer can act on.
func Parse(h string) (Context, error) {
	var c Context
	if len(h) > maxHeader {
		return c, fmt.Errorf("%w: %d bytes, at most %d", ErrMalformed, len(h), maxHeader)
	}
	if strings.TrimSpace(h) == "" {
		return c, fmt.Errorf("%w: empty; send key=value pairs such as \"workflow=etl-42; class=compaction\", or no header", ErrMalformed)
	}
	n := 0
	seen := 0 // bit set of class (1) and workflow (2)
	for rest := h; rest != ""; {
		var part string
		part, rest, _ = strings.Cut(rest, ";")
		part = strings.TrimSpace(part)
		if part == "" {
			if strings.TrimSpace(rest) == "" {
				break // a trailing ';'
			}
			return c, fmt.Errorf("%w: empty pair before %q", ErrMalformed, strings.TrimSpace(rest))
		}
		n++
		if n > maxPairs {
			return c, fmt.Errorf("%w: more than %d pairs", ErrMalformed, maxPairs)
		}
		k, v, ok := strings.Cut(part, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok {
			return c, fmt.Errorf("%w: pair %q has no '=' (want key=value)", ErrMalformed, part)
		}
		if !validKey(k) {
			return c, fmt.Errorf("%w: key %q: want 1-%d characters [a-z][a-z0-9_-]*", ErrMalformed, k, maxKey)
		}
		if !validValue(v) {
			return c, fmt.Errorf("%w: value of %s %q: want 1-%d characters [A-Za-z0-9._:/+@-]", ErrMalformed, k, v, maxValue)
		}
		switch k {
		case "class":
			if seen&1 != 0 {
				return c, fmt.Errorf("%w: class given twice", ErrMalformed)
			}
			if !ValidClass(v) {
				return c, fmt.Errorf("%w: class %q: want 1-%d characters [a-z0-9][a-z0-9_.-]*", ErrMalformed, v, maxClassLen)
			}
			seen |= 1
			c.Class = v
		case "workflow":
			if seen&2 != 0 {
				return c, fmt.Errorf("%w: workflow given twice", ErrMalformed)
			}
			seen |= 2
			c.Workflow = v
		default:
			for _, p := range c.Other {
				if p.Key == k {
					return c, fmt.Errorf("%w: %s given twice", ErrMalformed, k)
				}
			}
			c.Other = append(c.Other, Pair{k, v})
		}
	}
	return c, nil
}

// String renders c as a header value Parse reads back.
func (c Context) String() string {
	var parts []string
	if c.Workflow != "" {
		parts = append(parts, "workflow="+c.Workflow)
	}
	if c.Class != "" {
		parts = append(parts, "class="+c.Class)
	}
	for _, p := range c.Other {
		parts = append(parts, p.Key+"="+p.Value)
	}
	return strings.Join(parts, "; ")
}

func validKey(k string) bool {
	if k == "" || len(k) > maxKey || k[0] < 'a' || k[0] > 'z' {
		return false
	}
	for i := 1; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func validValue(v string) bool {
	if v == "" || len(v) > maxValue {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._:/+@-", c) >= 0) {
			return false
		}
	}
	return true
}

// ValidClass reports whether s is a class name: 1-63 characters
// [a-z0-9][a-z0-9_.-]* (qos.ValidClassName: the classes are flows there).
func ValidClass(s string) bool { return qos.ValidClassName(s) }

// FromHeader reads a request's x-facet-context; present is false when it
// has none. The error says what is wrong and names the header: a front
// end refuses the request with it (S3: 400 InvalidArgument), before it
// changes anything.
func FromHeader(h http.Header) (c Context, present bool, err error) {
	vs, ok := h[Header]
	if !ok {
		return Context{}, false, nil
	}
	if c, err = Parse(strings.Join(vs, ";")); err != nil {
		return Context{}, false, fmt.Errorf("%w (header %s)", err, Header)
	}
	return c, true, nil
}

type ctxKey struct{}

// Request is what classification reads of a request. The front end fills
// it from what it parsed (the target, the header) and carries it in the
// request's context to admission, where the tenant is known and the
// request is classified.
type Request struct {
	// Context is the parsed header; Present reports whether there was one.
	Context Context
	Present bool
	// BucketKey is "bucket/key" (or "bucket/" for bucket operations), as
	// the front end parsed it from the path or the Host.
	BucketKey string
	UserAgent string
	// Meta returns the value of x-amz-meta-NAME (NAME lower-case).
	Meta func(name string) string
	// Tenant and Class are set once the request is admitted and
	// classified.
	Tenant, Class string
}

// With returns ctx carrying r.
func With(ctx context.Context, r *Request) context.Context {
	return context.WithValue(ctx, ctxKey{}, r)
}

// From returns the request info ctx carries, or nil.
func From(ctx context.Context) *Request {
	r, _ := ctx.Value(ctxKey{}).(*Request)
	return r
}
