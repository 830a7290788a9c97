package promexp

import "github.com/prometheus/client_golang/prometheus"

func newQuotaRefusals() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "facet_quota_refusals_total",
		Help: "Requests refused for a tenant's quota or cap, by tenant and kind: bytes, objects, buckets, uploads " +
			"(quotas, answered 403 QuotaExceeded) and connections (the per-tenant cap on requests in flight, answered 503 SlowDown).",
	}, []string{"tenant", "kind"})
}

// QuotaRefused counts one refusal; the quota enforcement and the
// per-tenant request cap call it. Kinds are a fixed set and tenants are
// the server's own, so the labels stay bounded.
func (e *Exporter) QuotaRefused(tenant, kind string) {
	e.quotaRefusals.WithLabelValues(orUnknown(tenant), kind).Inc()
}
