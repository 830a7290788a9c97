package metrics

import "github.com/facet-sds/facet/internal/policy"

// KindVolume is a block volume's target ("volume:NAME"). Volume metrics
// are measured by the block stage (internal/block), not by the S3
// collector.
const KindVolume TargetKind = "volume"

// VolumeTarget builds a volume's target.
func VolumeTarget(volume string) Target { return Target{Kind: KindVolume, Volume: volume} }

// Elsewhere is implemented by modules that another stage of the node
// measures and publishes as node samples of its own (the block stage's
// volume metrics). The registry knows them, so that the DSL and the
// aggregator do; the S3 collector runs no cells for them and publishes no
// samples, because its empty sample of the same metric and node would
// take the place of that stage's in the aggregator's merge.
type Elsewhere interface {
	MeasuredBy() string
}

// volumeRate is a per-volume rate the block stage measures once per
// second and publishes for targets "volume:NAME" (block.Manager).
type volumeRate struct{ info Info }

func newVolumeRate(name string, unit policy.ValueKind) volumeRate {
	return volumeRate{info: described(name, MergeSum, unit)}
}

func (m volumeRate) Info() Info { return m.info }

// NewCell is never used by the collector (MeasuredBy); it returns a cell
// that reads zero, so that a module list built elsewhere still works.
func (volumeRate) NewCell() Cell { return new(Counter) }

func (volumeRate) MeasuredBy() string { return "block" }

// IsVolumeMetric reports whether a metric's targets are volumes.
func IsVolumeMetric(name string) bool { return policy.IsVolumeMetric(name) }
