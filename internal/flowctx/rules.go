package flowctx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Rule maps requests to a class. A rule matches when every matcher it sets
// matches: Prefix against "bucket/key", UserAgent as a substring of the
// User-Agent, Meta as "name" (the x-amz-meta-name header is present) or
// "name=value".
type Rule struct {
	Prefix    string `json:"prefix,omitempty"`
	UserAgent string `json:"user_agent,omitempty"`
	Meta      string `json:"meta,omitempty"`
	Class     string `json:"class"`
}

// Rules are a tenant's classification: the header's class wins, then the
// first matching rule, then Default (DefaultClass when empty).
type Rules struct {
	Default string `json:"default,omitempty"`
	Rules   []Rule `json:"rules"`
}

// maxRules bounds a tenant's rules: classification walks them per request.
const maxRules = 64

// ErrInvalidRules is wrapped by every rules validation error.
var ErrInvalidRules = errors.New("invalid context rules")

// ParseRules decodes and validates a tenant's rules (JSON, unknown fields
// refused).
func ParseRules(data []byte) (Rules, error) {
	var r Rules
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Rules{}, fmt.Errorf("%w: %v", ErrInvalidRules, err)
	}
	if dec.More() {
		return Rules{}, fmt.Errorf("%w: trailing data after the rules", ErrInvalidRules)
	}
	return r, r.Validate()
}

// Validate checks the rules.
func (r Rules) Validate() error {
	if r.Default != "" && !ValidClass(r.Default) {
		return fmt.Errorf("%w: default class %q: want 1-%d characters [a-z0-9][a-z0-9_.-]*", ErrInvalidRules, r.Default, maxClassLen)
	}
	if len(r.Rules) > maxRules {
		return fmt.Errorf("%w: %d rules, at most %d", ErrInvalidRules, len(r.Rules), maxRules)
	}
	for i, x := range r.Rules {
		switch {
		case !ValidClass(x.Class):
			return fmt.Errorf("%w: rule %d: class %q: want 1-%d characters [a-z0-9][a-z0-9_.-]*", ErrInvalidRules, i+1, x.Class, maxClassLen)
		case x.Prefix == "" && x.UserAgent == "" && x.Meta == "":
			return fmt.Errorf("%w: rule %d matches everything: set prefix, user_agent or meta (or use default)", ErrInvalidRules, i+1)
		case len(x.Prefix) > 1024 || len(x.UserAgent) > 256 || len(x.Meta) > 256:
			return fmt.Errorf("%w: rule %d: a matcher is too long", ErrInvalidRules, i+1)
		}
		if x.Meta != "" {
			name, _, _ := strings.Cut(x.Meta, "=")
			if !validKey(strings.ToLower(name)) || name != strings.ToLower(name) {
				return fmt.Errorf("%w: rule %d: meta %q: want name or name=value, name lower-case [a-z][a-z0-9_-]*", ErrInvalidRules, i+1, x.Meta)
			}
		}
	}
	return nil
}

// Classifier classifies the requests of one tenant. It is immutable.
type Classifier struct {
	def   string
	rules []compiled
}

type compiled struct {
	prefix, ua, metaName, metaValue string
	hasMetaValue                    bool
	class                           string
}

// Compile turns validated rules into a classifier.
func Compile(r Rules) *Classifier {
	c := &Classifier{def: r.Default}
	if c.def == "" {
		c.def = DefaultClass
	}
	for _, x := range r.Rules {
		cr := compiled{prefix: x.Prefix, ua: x.UserAgent, class: x.Class}
		if x.Meta != "" {
			cr.metaName, cr.metaValue, cr.hasMetaValue = strings.Cut(x.Meta, "=")
		}
		c.rules = append(c.rules, cr)
	}
	return c
}

// Default is the tenant's default class.
func (c *Classifier) Default() string { return c.def }

// DefaultOr is Default, or DefaultClass for a nil Classifier (a tenant
// without rules).
func (c *Classifier) DefaultOr() string {
	if c == nil {
		return DefaultClass
	}
	return c.def
}

// Source says what decided a request's class.
type Source string

// The sources of a class.
const (
	SourceHeader  Source = "header"
	SourceRule    Source = "rule"
	SourceDefault Source = "default"
)

// Classify returns r's class and what decided it. A nil Classifier (a
// tenant without rules) knows only the header and DefaultClass.
func (c *Classifier) Classify(r *Request) (string, Source) {
	if r.Present && r.Context.Class != "" {
		return r.Context.Class, SourceHeader
	}
	if c == nil {
		return DefaultClass, SourceDefault
	}
	for i := range c.rules {
		x := &c.rules[i]
		if x.prefix != "" && !strings.HasPrefix(r.BucketKey, x.prefix) {
			continue
		}
		if x.ua != "" && !strings.Contains(r.UserAgent, x.ua) {
			continue
		}
		if x.metaName != "" {
			if r.Meta == nil {
				continue
			}
			v := r.Meta(x.metaName)
			if v == "" || x.hasMetaValue && v != x.metaValue {
				continue
			}
		}
		return x.class, SourceRule
	}
	return c.def, SourceDefault
}
