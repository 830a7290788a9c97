package wasm

import "github.com/prometheus/client_golang/prometheus"

// Collectors are the runtime's Prometheus metrics: how many modules were
// compiled to machine code and how many were loaded from the on-disk
// compilation cache (a restarted node should only load).
func (r *Runtime) Collectors() []prometheus.Collector {
	vec := func(source string, f func(CompileStats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "facet_wasm_modules_total",
			Help:        "WASM filter modules made ready to run, by source: compiled, or loaded from the on-disk compilation cache.",
			ConstLabels: prometheus.Labels{"source": source},
		}, func() float64 { return float64(f(r.Stats())) })
	}
	return append([]prometheus.Collector{
		vec("compiled", func(s CompileStats) uint64 { return s.Compiled }),
		vec("cache", func(s CompileStats) uint64 { return s.Loaded }),
	}, r.budgetCollectors()...)
}
