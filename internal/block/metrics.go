package block

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Collector exposes per-volume counters and rates to Prometheus, read at
// scrape time: facet_volume_{read,write}_{bytes,ops}_total and the rates
// of the last second, facet_volume_read_bw, facet_volume_write_bw
// (bytes/s), facet_volume_read_iops, facet_volume_write_iops.
func (m *Manager) Collector() prometheus.Collector { return collector{m} }

type collector struct{ m *Manager }

func desc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("facet_volume_"+name, help, []string{"volume", "tenant"}, nil)
}

func (c collector) descs() (totals, rates [4]*prometheus.Desc) {
	for i, n := range [4]string{"read_bytes_total", "write_bytes_total", "read_ops_total", "write_ops_total"} {
		totals[i] = desc(n, "Block volume I/O served by this process ("+n+").")
	}
	for i, n := range [4]string{"read_bw", "write_bw", "read_iops", "write_iops"} {
		rates[i] = desc(n, "Block volume I/O rate over the last second ("+n+"; bytes/s or operations/s).")
	}
	return
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	t, r := c.descs()
	for i := range t {
		ch <- t[i]
		ch <- r[i]
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	t, r := c.descs()
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	for name, st := range c.m.stats {
		tenant := c.m.vols[name].Tenant
		tot := st.totals()
		for i, n := range []int64{tot.ReadBytes, tot.WriteBytes, tot.ReadOps, tot.WriteOps} {
			ch <- prometheus.MustNewConstMetric(t[i], prometheus.CounterValue, float64(n), name, tenant)
		}
		rt := c.m.rates[name]
		for i, x := range []float64{rt.ReadBW, rt.WriteBW, rt.ReadIOPS, rt.WriteIOPS} {
			ch <- prometheus.MustNewConstMetric(r[i], prometheus.GaugeValue, x, name, tenant)
		}
	}
}
