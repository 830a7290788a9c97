package cache

import "github.com/prometheus/client_golang/prometheus"

// Collectors export the store's counters to Prometheus. They read the
// counters at scrape time; the request path never touches Prometheus.
func (s *Store) Collectors() []prometheus.Collector {
	counter := func(name, help string, f func(Stats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return f(s.Stats()) })
	}
	gauge := func(name, help string, f func(Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return f(s.Stats()) })
	}
	return []prometheus.Collector{
		counter("facet_cache_hits_total", "GETs served from the gateway's object cache.", func(st Stats) float64 { return float64(st.Hits) }),
		counter("facet_cache_misses_total", "GETs under a caching policy that read the backend.", func(st Stats) float64 { return float64(st.Misses) }),
		counter("facet_cache_served_bytes_total", "Bytes served from the object cache.", func(st Stats) float64 { return float64(st.BytesServed) }),
		counter("facet_cache_admissions_total", "Objects admitted to the object cache.", func(st Stats) float64 { return float64(st.Admitted) }),
		counter("facet_cache_evictions_total", "Entries evicted to make room.", func(st Stats) float64 { return float64(st.Evictions) }),
		counter("facet_cache_stale_total", "Entries dropped because the object had changed when they were looked up.", func(st Stats) float64 { return float64(st.Stale) }),
		counter("facet_cache_invalidations_total", "Entries dropped by an invalidation (local change or bus message).", func(st Stats) float64 { return float64(st.Invalidations) }),
		counter("facet_cache_invalidations_published_total", "Invalidations published on the bus.", func(st Stats) float64 { return float64(st.Published) }),
		counter("facet_cache_bus_outages_total", "Times the bus became unreachable for the cache.", func(st Stats) float64 { return float64(st.BusOutages) }),
		gauge("facet_cache_hit_ratio", "Hits over lookups since start.", func(st Stats) float64 {
			if st.Hits+st.Misses == 0 {
				return 0
			}
			return float64(st.Hits) / float64(st.Hits+st.Misses)
		}),
		gauge("facet_cache_bytes", "Bytes held by the object cache.", func(st Stats) float64 { return float64(st.Bytes) }),
		gauge("facet_cache_entries", "Objects held by the object cache.", func(st Stats) float64 { return float64(st.Entries) }),
		gauge("facet_cache_bus_connected", "1 while the bus carrying invalidations is reachable.", func(st Stats) float64 {
			if st.BusConnected {
				return 1
			}
			return 0
		}),
	}
}
