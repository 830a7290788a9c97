package metrics

import "testing"

func TestVolumeWriteIOPS(t *testing.T) {
	m := VolumeWriteIOPS()
	if _, elsewhere := m.(Elsewhere); !elsewhere || m.Info().Name != "volume_write_iops" || m.NewCell().Flush(1e9) != (Sample{}) {
		t.Fatalf("%+v", m.Info())
	}
}
