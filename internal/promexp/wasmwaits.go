package promexp

import "github.com/prometheus/client_golang/prometheus"

func newWasmWaits() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "facet_wasm_queue_waits_total",
		Help: "Requests for a slot in the node's WASM instance budget, by tenant and outcome: immediate (a slot was free), " +
			"queued (granted after waiting its turn), joined (a later filter of a request holding a slot), " +
			"timeout and full (refused with 503 SlowDown: waited too long, or the tenant's queue was full), canceled.",
	}, []string{"tenant", "outcome"})
}

// WasmAdmitted counts one request for a WASM instance slot; the WASM
// runtime calls it (wasm.Config.OnAdmit). Outcomes are a fixed set.
func (e *Exporter) WasmAdmitted(tenant, outcome string) {
	e.wasmWaits.WithLabelValues(orUnknown(tenant), outcome).Inc()
}
