package metrics

import (
	"testing"

	"github.com/facet-sds/facet/internal/policy"
)

// The volume metrics are known to the registry (the DSL and the
// aggregator) but measured by the block stage: the collector runs none.
func TestVolumeMetrics(t *testing.T) {
	want := map[string]policy.ValueKind{"volume_read_bw": policy.KindByteRate, "volume_write_bw": policy.KindByteRate,
		"volume_read_iops": policy.KindOpsRate, "volume_write_iops": policy.KindOpsRate}
	reg := NewBuiltinRegistry()
	for name, unit := range want {
		in, ok := reg.Lookup(name)
		if !ok || in.Unit != unit || in.Merge != MergeSum || !IsVolumeMetric(name) {
			t.Errorf("%s: %+v %v", name, in, ok)
		}
	}
	for _, m := range NewCollector(CollectorConfig{}).modules {
		if IsVolumeMetric(m.Info().Name) {
			t.Errorf("the S3 collector runs %s", m.Info().Name)
		}
	}
}

// Two nodes' block stages report a volume; a subscriber to volume:v1 gets
// the sum, and v2's values never reach it.
func TestVolumeTargetAggregated(t *testing.T) {
	a := NewAggregator(AggregatorConfig{})
	v1 := subscribe(t, a, "volume_write_iops", "volume:v1")
	warm(a, "volume_write_iops", "A", "B")
	v1.vs = nil
	a.Ingest(sample("A", "volume_write_iops", 1, map[string]float64{"volume:v1": 700, "volume:v2": 5}, nil))
	a.Ingest(sample("B", "volume_write_iops", 1, map[string]float64{"volume:v1": 300}, nil))
	got := v1.values()
	if len(got) != 1 || got[0] != (Value{Metric: "volume_write_iops", Target: "volume:v1", Value: 1000, Period: at(1), Nodes: 2}) {
		t.Fatalf("volume:v1 received %+v", got)
	}
	if _, err := a.Subscribe("volume_write_iops", "volume:", func(Value) {}); err == nil {
		t.Fatal("an empty volume target was accepted")
	}
}
