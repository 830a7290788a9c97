package metrics

import "testing"

func TestVolumeWriteBW(t *testing.T) {
	m := VolumeWriteBW()
	if _, elsewhere := m.(Elsewhere); !elsewhere || m.Info().Name != "volume_write_bw" || m.NewCell().Flush(1e9) != (Sample{}) {
		t.Fatalf("%+v", m.Info())
	}
}
