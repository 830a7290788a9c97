package metrics

import "testing"

func TestVolumeReadIOPS(t *testing.T) {
	m := VolumeReadIOPS()
	if _, elsewhere := m.(Elsewhere); !elsewhere || m.Info().Name != "volume_read_iops" || m.NewCell().Flush(1e9) != (Sample{}) {
		t.Fatalf("%+v", m.Info())
	}
}
