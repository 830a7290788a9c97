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

// Decoder returns the filter named name in the registry in force and its
// decoder, provisioned when that registry loaded (dataplane.DecoderLookup):
// reverse plans are undone by ready instances. false when the filter is
// unknown or its decoder could not be provisioned here.
func (s *Service) Decoder(name string) (*filter.Info, filter.Decoder, bool) {
	st := s.state.Load()
	dec, ok := st.decoders[name]
	if !ok {
		return nil, nil, false
	}
	in, _ := st.registry.Lookup(name)
	return in, dec, true
}

// provisionDecoders builds a decoder of every reversible filter of reg,
// with default parameters: a record carries what its undoing needs. A
// filter that cannot be provisioned here is left out; the data plane
// then builds it per request and reports why it cannot.
func (s *Service) provisionDecoders(reg *filter.Registry) map[string]filter.Decoder {
	out := map[string]filter.Decoder{}
	for _, name := range reg.Names() {
		in, _ := reg.Lookup(name)
		if !in.Reversible || in.Config == nil {
			continue
		}
		f, err := in.New(nil, s.env)
		if err != nil {
			continue
		}
		if dec, ok := f.(filter.Decoder); ok {
			out[name] = dec
		}
	}
	return out
}
