package metrics

import "github.com/facet-sds/facet/internal/policy"

// VolumeWriteIOPS is volume_write_iops: write requests (WRITE, WRITE_ZEROES) to the volume per second (block stage, per volume).
func VolumeWriteIOPS() Module {
	return volumeRate{name: "volume_write_iops", unit: policy.KindOpsRate, doc: "write requests (WRITE, WRITE_ZEROES) to the volume per second"}
}
