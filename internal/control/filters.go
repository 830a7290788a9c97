package control

import (
	"context"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/meta"
)

// generation returns the registry of a reload: the native filters plus
// the run-time registered ones of entries. A filter that does not load
// (or whose name a native filter holds) is left out and logged; policies
// naming it are then left out of the table too, as for any unknown
// filter.
func (s *Service) generation(ctx context.Context, entries []meta.FilterEntry) *filter.Registry {
	if s.dynamic == nil || len(entries) == 0 {
		return s.registry
	}
	infos, err := s.dynamic.Load(ctx, entries)
	if err != nil {
		s.log.Error("registered filters failed to load; they are left out", "err", err)
	}
	keep := infos[:0]
	for _, in := range infos {
		if _, dup := s.registry.Lookup(in.Name); dup {
			s.log.Error("registered filter left out: a native filter has its name", "filter", in.Name)
			continue
		}
		keep = append(keep, in)
	}
	reg, err := s.registry.Extend(keep...)
	if err != nil { // the store holds each name once
		s.log.Error("registered filters left out", "err", err)
		return s.registry
	}
	return reg
}

// Lookup finds a filter in the registry in force, native or registered at
// run time: the GET path undoes objects' reverse plans with it.
func (s *Service) Lookup(name string) (*filter.Info, bool) {
	return s.state.Load().registry.Lookup(name)
}
