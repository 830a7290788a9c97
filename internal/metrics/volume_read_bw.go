package metrics

import "github.com/facet-sds/facet/internal/policy"

// VolumeReadBW is volume_read_bw: bytes read from the volume per second (block stage, per volume).
func VolumeReadBW() Module {
	return newVolumeRate("volume_read_bw", policy.KindByteRate)
}
