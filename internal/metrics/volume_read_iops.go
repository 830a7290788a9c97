package metrics

import "github.com/facet-sds/facet/internal/policy"

// VolumeReadIOPS is volume_read_iops: read requests to the volume per second (block stage, per volume).
func VolumeReadIOPS() Module {
	return newVolumeRate("volume_read_iops", policy.KindOpsRate)
}
