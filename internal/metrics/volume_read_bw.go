package metrics

import "github.com/facet-sds/facet/internal/policy"

// VolumeReadBW is volume_read_bw: bytes read from the volume per second (block stage, per volume).
func VolumeReadBW() Module {
	return volumeRate{name: "volume_read_bw", unit: policy.KindByteRate, doc: "bytes read from the volume per second"}
}
