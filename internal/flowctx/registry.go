package flowctx

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"time"
)

// RulesStore is where tenants' rules live (*meta.Store).
type RulesStore interface {
	AllContextRules(ctx context.Context) (map[string]json.RawMessage, error)
}

// Registry keeps every tenant's compiled classifier in memory, swapped
// whole on reload, so that a request's classification takes no lock and
// no store round trip.
type Registry struct {
	src RulesStore
	log *slog.Logger
	m   atomic.Pointer[map[string]*Classifier]
}

// NewRegistry returns an empty registry over src.
func NewRegistry(src RulesStore, log *slog.Logger) *Registry {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Registry{src: src, log: log}
	r.m.Store(&map[string]*Classifier{})
	return r
}

// Reload reads every tenant's rules. A tenant whose stored rules no longer
// validate keeps the header and DefaultClass, and the problem is logged.
func (r *Registry) Reload(ctx context.Context) error {
	all, err := r.src.AllContextRules(ctx)
	if err != nil {
		return err
	}
	m := make(map[string]*Classifier, len(all))
	for tenant, raw := range all {
		rules, err := ParseRules(raw)
		if err != nil {
			r.log.Error("flowctx: stored context rules do not validate; tenant falls back to the default class", "tenant", tenant, "err", err)
			continue
		}
		m[tenant] = Compile(rules)
	}
	r.m.Store(&m)
	return nil
}

// Rules returns tenant's classifier, nil when it has no rules.
func (r *Registry) Rules(tenant string) *Classifier { return (*r.m.Load())[tenant] }

// Run reloads every period until ctx ends, so that rules set through
// another gateway of a fleet arrive here too.
func (r *Registry) Run(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := r.Reload(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn("flowctx: reload context rules", "err", err)
			}
		}
	}
}
