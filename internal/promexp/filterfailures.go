package promexp

import "github.com/prometheus/client_golang/prometheus"

func newFilterFailures() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "facet_filter_failures_total",
		Help: "Sandboxed (WASM) filter invocations that failed, by filter and reason: trap, timeout, memory, output " +
			"(more output than the cap allows), exit (non-zero exit status).",
	}, []string{"filter", "reason"})
}

// FilterFailed counts one failed filter invocation; the WASM runtime
// calls it (wasm.Config.OnFailure). Filter names are registered names
// and reasons a fixed set, so the labels stay bounded.
func (e *Exporter) FilterFailed(filter, reason string) {
	e.filterFails.WithLabelValues(filter, reason).Inc()
}
