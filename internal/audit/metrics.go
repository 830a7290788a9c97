package audit

import "github.com/prometheus/client_golang/prometheus"

// metrics are the log's own counters, registered by the server
// (Collectors).
type metrics struct {
	records   *prometheus.CounterVec
	dropped   prometheus.Counter
	errors    prometheus.Counter
	rotations prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		records: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "facet_audit_records_total",
			Help: "Audit records queued for the audit log, by kind (s3, admin, signin)."}, []string{"kind"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "facet_audit_dropped_total",
			Help: "Audit records dropped because the writer's buffer was full (or the log closed): alert on any."}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "facet_audit_write_errors_total",
			Help: "Failed writes, fsyncs and rotations of the audit log."}),
		rotations: prometheus.NewCounter(prometheus.CounterOpts{Name: "facet_audit_rotations_total",
			Help: "Rotations of the audit log file."}),
	}
}

// Collectors are the log's Prometheus metrics.
func (l *Log) Collectors() []prometheus.Collector {
	m := l.metrics
	return []prometheus.Collector{m.records, m.dropped, m.errors, m.rotations}
}
