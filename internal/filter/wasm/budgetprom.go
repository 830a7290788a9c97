package wasm

import "github.com/prometheus/client_golang/prometheus"

// budgetCollectors expose what the budget holds now: instances running,
// memory reserved, requests waiting for a slot.
func (r *Runtime) budgetCollectors() []prometheus.Collector {
	gauge := func(name, help string, f func(BudgetStats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return f(r.BudgetStats()) })
	}
	return []prometheus.Collector{
		gauge("facet_wasm_instances_running", "WASM filter instances holding a slot of the node's budget (--wasm-max-instances).",
			func(s BudgetStats) float64 { return float64(s.Running) }),
		gauge("facet_wasm_memory_reserved_bytes", "Linear memory reserved by running WASM instances (each its cap), out of --wasm-memory-budget.",
			func(s BudgetStats) float64 { return float64(s.Reserved) }),
		gauge("facet_wasm_queue_waiting", "Requests waiting for a slot of the node's WASM instance budget.",
			func(s BudgetStats) float64 { return float64(s.Waiting) }),
	}
}
