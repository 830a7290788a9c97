package control

import (
	"context"
	"slices"
	"testing"

	"github.com/facet-sds/facet/internal/meta"
)

// volumeStore lists volumes as the metadata store does.
type volumeStore struct {
	listStore
	volumes []string
}

func (s *volumeStore) ListVolumes(context.Context) ([]meta.Volume, error) {
	var out []meta.Volume
	for _, v := range s.volumes {
		out = append(out, meta.Volume{Name: v})
	}
	return out, nil
}

// A volume policy's trigger follows the volume's feed target, which the
// block stage publishes; ALL VOLUMES follows every volume.
func TestExpandVolumeTargets(t *testing.T) {
	ctx := context.Background()
	st := &volumeStore{listStore: listStore{tenants: []string{"t1"}}, volumes: []string{"v1", "v2"}}
	for _, tc := range []struct {
		targets string
		want    []string
	}{
		{"VOLUME v1", []string{"volume:v1"}},
		{"VOLUME v1, VOLUME v2", []string{"volume:v1", "volume:v2"}},
		{"ALL VOLUMES", []string{"volume:v1", "volume:v2"}},
	} {
		cp := compileOne(t, "FOR "+tc.targets+" WHEN volume_write_iops > 1000 DO SET throttle WITH write_iops=1000")
		got, err := expandTargets(ctx, cp.Policy, nil, &world{store: st, buckets: map[string][]string{}})
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("FOR %s: %v %v, want %v", tc.targets, got, err, tc.want)
		}
	}
	if TargetVolume("v1") != "volume:v1" {
		t.Fatal(TargetVolume("v1"))
	}
}
