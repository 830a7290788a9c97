// Package metrics owns Facet's workload metrics: the modules that measure
// requests in the data plane (ops, bandwidth, latency, in-flight requests,
// compressibility...), the Collector that runs them on every S3 request
// and publishes one message per metric per period on the bus, and the
// Aggregator that merges the nodes' samples per target and pushes each
// value only to the controllers subscribed to that target (the observer
// pattern of IOStack D2.2 §6.5).
//
// A metric is a Module, registered by name in one explicit list
// (builtin.go). It keeps one Cell per target (tenant, bucket, and object
// when someone watches it) and hooks into the request's start, its payload
// chunks and its end, like Crystal's AbstractMetric. Hooks run on the
// request path: they update atomics, nothing more. Subjects and JSON
// messages are documented in docs/bus.md.
package metrics

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/facet-sds/facet/internal/obs"
	"github.com/facet-sds/facet/internal/policy"
)

// Merge says how the aggregator combines the nodes' values of a target.
type Merge string

const (
	// MergeSum adds the nodes' values: rates and gauges.
	MergeSum Merge = "sum"
	// MergeMax keeps the largest: tail latencies (a conservative bound;
	// quantiles do not add).
	MergeMax Merge = "max"
	// MergeMean is the mean weighted by each node's weight: ratios and
	// mean latencies.
	MergeMean Merge = "mean"
)

// Info describes a metric. Name and Unit are what the policy DSL checks
// conditions against (policy.MetricInfo); values are in the unit's
// canonical form (per second, bytes, seconds, plain ratios).
type Info struct {
	Name  string
	Unit  policy.ValueKind
	Doc   string
	Merge Merge
}

// Sample is a cell's value over one period. Weight matters to MergeMean
// metrics: the aggregator weights each node's value by it, and a zero
// weight means "no observation" (the value is then ignored).
type Sample struct {
	Value, Weight float64
}

// Module is a workload metric. It makes the per-target state and may
// implement any of Starter, Finisher and PayloadWatcher; a module with no
// hook measures nothing.
type Module interface {
	Info() Info
	// NewCell returns an empty accumulator for one target.
	NewCell() Cell
}

// Cell accumulates one metric for one target. Hooks update it
// concurrently from many requests; Flush is called by the collector,
// once per period, concurrently with the hooks.
type Cell interface {
	// Flush returns the value of the period that just ended, which lasted
	// elapsed, and starts the next one.
	Flush(elapsed time.Duration) Sample
}

// Cells are the cells of one module for the targets a request counts in:
// its tenant, its bucket (when it has one) and its object (when watched).
// Hooks add to each of them. It is passed by value: a pointer would
// escape through the hook's interface call and cost an allocation.
type Cells struct {
	n int
	c [3]Cell
}

// Len is the number of targets.
func (cs Cells) Len() int { return cs.n }

// At returns the i-th target's cell.
func (cs Cells) At(i int) Cell { return cs.c[i] }

// Starter is a module that looks at requests when they start (once
// authenticated and routed).
type Starter interface {
	Start(o *obs.Observation, cells Cells)
}

// Finisher is a module that looks at requests when they end. Finish is
// called for every request Start was called for, with the same cells.
type Finisher interface {
	Finish(o *obs.Observation, cells Cells)
}

// PayloadWatcher is a module that looks at the bytes of write payloads (a
// PUT's body, before filters). It returns nil when it does not want this
// payload.
type PayloadWatcher interface {
	Payload(o *obs.Observation, cells Cells) ChunkWatcher
}

// ChunkWatcher sees a payload's bytes as the request reads them. Chunk
// must not keep p. End is called once, when the payload has been read to
// its end or has failed; it may not be called when a request abandons its
// payload halfway (the watcher is then garbage).
type ChunkWatcher interface {
	Chunk(p []byte)
	End()
}

// Registry is a set of modules by name. It is safe for concurrent use;
// registering a new module makes it visible to collectors built after and
// to the DSL's vocabulary at its next rebuild.
type Registry struct {
	mu      sync.RWMutex
	modules []Module
}

var validName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// NewRegistry returns a registry holding modules, in order. It panics on
// an invalid or duplicate name: the list is code.
func NewRegistry(modules ...Module) *Registry {
	r := &Registry{}
	for _, m := range modules {
		if err := r.Register(m); err != nil {
			panic(err)
		}
	}
	return r
}

// Register adds a module. Names are lower case words ([a-z][a-z0-9_]*):
// they are subject tokens on the bus and words of the DSL.
func (r *Registry) Register(m Module) error {
	info := m.Info()
	if !validName.MatchString(info.Name) {
		return fmt.Errorf("metric name %q: want a lower-case word ([a-z][a-z0-9_]*)", info.Name)
	}
	switch info.Merge {
	case MergeSum, MergeMax, MergeMean:
	default:
		return fmt.Errorf("metric %s: unknown merge %q", info.Name, info.Merge)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.modules {
		if o.Info().Name == info.Name {
			return fmt.Errorf("metric %s registered twice", info.Name)
		}
	}
	r.modules = append(r.modules, m)
	return nil
}

// Modules returns the registered modules, in registration order.
func (r *Registry) Modules() []Module {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.modules)
}

// Lookup returns a module's Info by name.
func (r *Registry) Lookup(name string) (Info, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, m := range r.modules {
		if i := m.Info(); i.Name == name {
			return i, true
		}
	}
	return Info{}, false
}

// Infos lists the registered metrics, sorted by name.
func (r *Registry) Infos() []Info {
	r.mu.RLock()
	out := make([]Info, 0, len(r.modules))
	for _, m := range r.modules {
		out = append(out, m.Info())
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b Info) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out
}

// PolicyMetrics returns the registry as the DSL's vocabulary wants it.
func (r *Registry) PolicyMetrics() []policy.MetricInfo {
	infos := r.Infos()
	out := make([]policy.MetricInfo, len(infos))
	for i, in := range infos {
		out[i] = policy.MetricInfo{Name: in.Name, Unit: in.Unit, Doc: in.Doc}
	}
	return out
}

// watchingReader hands a payload's bytes to chunk watchers.
type watchingReader struct {
	r io.Reader
	w []ChunkWatcher
}

func (wr *watchingReader) Read(p []byte) (int, error) {
	n, err := wr.r.Read(p)
	if n > 0 {
		for _, w := range wr.w {
			w.Chunk(p[:n])
		}
	}
	if err != nil && wr.w != nil {
		for _, w := range wr.w {
			w.End()
		}
		wr.w = nil
	}
	return n, err
}
