package metrics

import "testing"

func TestVolumeReadBW(t *testing.T) {
	m := VolumeReadBW()
	if _, elsewhere := m.(Elsewhere); !elsewhere || m.Info().Name != "volume_read_bw" || m.NewCell().Flush(1e9) != (Sample{}) {
		t.Fatalf("%+v", m.Info())
	}
}
