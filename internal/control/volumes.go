package control

import (
	"context"

	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/policy"
)

// VolumeTable returns the policy table in force, for the block stage
// (block.Policies): volume filter stacks and throttles resolve from it.
func (s *Service) VolumeTable() *policy.Table { return s.state.Load().table }

// volumeLister is the part of the store that lists volumes; a store
// without it has no volume targets.
type volumeLister interface {
	ListVolumes(ctx context.Context) ([]meta.Volume, error)
}

// TargetVolume names a volume's Feed target; the block stage publishes
// its metrics (volume_read_bw...) for it.
func TargetVolume(volume string) string { return "volume:" + volume }

// volumeNames lists the volumes policies may target.
func (s *Service) volumeNames(ctx context.Context) ([]string, error) {
	return listVolumeNames(ctx, s.store)
}

// allVolumes lists the volumes ALL VOLUMES expands to, once per Sync.
func (w *world) allVolumes(ctx context.Context) ([]string, error) {
	if w.volumes == nil {
		vols, err := listVolumeNames(ctx, w.store)
		if err != nil {
			return nil, err
		}
		w.volumes = append([]string{}, vols...)
	}
	return w.volumes, nil
}

func listVolumeNames(ctx context.Context, store any) ([]string, error) {
	vl, ok := store.(volumeLister)
	if !ok {
		return nil, nil
	}
	vols, err := vl.ListVolumes(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(vols))
	for i, v := range vols {
		names[i] = v.Name
	}
	return names, nil
}
