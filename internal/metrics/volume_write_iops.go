package metrics

import "github.com/facet-sds/facet/internal/policy"

// VolumeWriteIOPS is volume_write_iops: write requests (WRITE, WRITE_ZEROES) to the volume per second (block stage, per volume).
func VolumeWriteIOPS() Module {
	return newVolumeRate("volume_write_iops", policy.KindOpsRate)
}
