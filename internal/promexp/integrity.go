package promexp

import "github.com/prometheus/client_golang/prometheus"

// Integrity holds the end-to-end checksum families: mismatches found on
// reads and what the scrubber went through. A server registers its
// Collectors once it knows its backend.
type Integrity struct {
	failures     *prometheus.CounterVec
	scrubObjects *prometheus.CounterVec
	scrubBytes   prometheus.Counter
	scrubRuns    prometheus.Counter
}

// ScrubResults are the results a scrubbed object is counted under.
var ScrubResults = []string{"ok", "damaged", "missing", "unverified"}

// NewIntegrity returns the integrity families.
func NewIntegrity() *Integrity {
	m := &Integrity{
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facet_integrity_failures_total",
			Help: "Stored objects whose bytes failed their checksum when read (GET, copy source, scrub), by owning tenant " +
				"and backend (fs, s3); none of the failing bytes were served.",
		}, []string{"tenant", "backend"}),
		scrubObjects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "facet_scrub_objects_total",
			Help: "Objects the scrubber read, by result: ok, damaged (a checksum failed), missing (listed but unreadable), " +
				"unverified (stored before checksums were kept).",
		}, []string{"result"}),
		scrubBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facet_scrub_bytes_total",
			Help: "Stored bytes the scrubber read and checked.",
		}),
		scrubRuns: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "facet_scrub_runs_total",
			Help: "Scrub runs finished (completed, failed or cancelled).",
		}),
	}
	for _, r := range ScrubResults {
		m.scrubObjects.WithLabelValues(r) // shown at 0 before the first scrub
	}
	return m
}

// Collectors are the families to register.
func (m *Integrity) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.failures, m.scrubObjects, m.scrubBytes, m.scrubRuns}
}

// Failed counts one read that found damage in an object of tenant's.
func (m *Integrity) Failed(tenant, backend string) {
	if tenant == "" {
		tenant = unknown
	}
	m.failures.WithLabelValues(tenant, backend).Inc()
}

// Scrubbed counts one object the scrubber checked, and its stored bytes.
func (m *Integrity) Scrubbed(result string, bytes int64) {
	m.scrubObjects.WithLabelValues(result).Inc()
	m.scrubBytes.Add(float64(bytes))
}

// ScrubDone counts a finished scrub run.
func (m *Integrity) ScrubDone() { m.scrubRuns.Inc() }
