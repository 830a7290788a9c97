package promexp

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func newWasmCPU() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "facet_wasm_cpu_seconds_total",
		Help: "CPU time of WASM filter instances, charged to the tenant whose request ran them, by filter " +
			"(the instance thread's CPU time on Linux, its wall time elsewhere).",
	}, []string{"tenant", "filter"})
}

// WasmCPU charges one WASM instance's CPU time to its tenant; the WASM
// runtime calls it (wasm.Config.OnCPU).
func (e *Exporter) WasmCPU(tenant, filter string, d time.Duration) {
	e.wasmCPU.WithLabelValues(orUnknown(tenant), filter).Add(d.Seconds())
}
