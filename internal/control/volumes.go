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

// volumeNames lists the volumes policies may target.
func (s *Service) volumeNames(ctx context.Context) ([]string, error) {
	vl, ok := s.store.(volumeLister)
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
