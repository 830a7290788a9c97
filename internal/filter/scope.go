package filter

import (
	"context"
	"errors"
	"sync"
)

// ErrBusy is wrapped by a filter that could not start because a node-wide
// budget it shares with other requests (the WASM runtime's instances and
// memory) stayed exhausted for as long as the request may wait: the
// client did nothing wrong and may retry, so front ends answer S3's
// 503 SlowDown rather than the filter's failure.
var ErrBusy = errors.New("filter budget exhausted")

// Scope is one request's share of node-wide filter resources. A request
// whose pipeline runs several sandboxed filters takes a budget's slot
// once, for all of them: were each filter to take its own, a request
// holding the last slot for its first filter would wait for itself.
type Scope struct {
	mu   sync.Mutex
	vals map[any]any
}

type scopeKey struct{}

// WithScope returns ctx carrying a new, empty Scope: the S3 front end
// starts one per request.
func WithScope(ctx context.Context) context.Context {
	return context.WithValue(ctx, scopeKey{}, &Scope{})
}

// Scoped returns ctx if it carries a Scope, else WithScope(ctx): what
// builds a chain of filters outside an S3 request (a background task, a
// decoder's Open) calls it, so that the chain's filters share a slot.
func Scoped(ctx context.Context) context.Context {
	if ScopeOf(ctx) != nil {
		return ctx
	}
	return WithScope(ctx)
}

// ScopeOf returns ctx's Scope, nil when it carries none (each filter
// then takes what it needs on its own).
func ScopeOf(ctx context.Context) *Scope {
	s, _ := ctx.Value(scopeKey{}).(*Scope)
	return s
}

// Lock runs f with the value kept under key (nil at first) and keeps what
// f returns, under the Scope's lock: filters of one request may start and
// finish on different goroutines.
func (s *Scope) Lock(key any, f func(v any) any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := f(s.vals[key])
	if v == nil {
		delete(s.vals, key)
		return
	}
	if s.vals == nil {
		s.vals = map[any]any{}
	}
	s.vals[key] = v
}
