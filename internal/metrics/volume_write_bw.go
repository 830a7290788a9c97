package metrics

import "github.com/facet-sds/facet/internal/policy"

// VolumeWriteBW is volume_write_bw: bytes written to the volume per second (block stage, per volume).
func VolumeWriteBW() Module {
	return newVolumeRate("volume_write_bw", policy.KindByteRate)
}
