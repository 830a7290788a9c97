package promexp

import (
	"io"

	"github.com/facet-sds/facet/internal/obs"
)

// Multi tells every observer about every request, in order: Prometheus
// and the workload metrics watch the same requests. Nil observers are
// skipped; Body chains each observer's wrapper over the previous one's.
func Multi(observers ...obs.Observer) obs.Observer {
	var m multi
	for _, o := range observers {
		switch o := o.(type) {
		case nil:
		case multi:
			m = append(m, o...)
		default:
			m = append(m, o)
		}
	}
	if len(m) == 1 {
		return m[0]
	}
	return m
}

type multi []obs.Observer

func (m multi) Started(o *obs.Observation) {
	for _, ob := range m {
		ob.Started(o)
	}
}

func (m multi) Body(o *obs.Observation, r io.Reader) io.Reader {
	for _, ob := range m {
		r = ob.Body(o, r)
	}
	return r
}

func (m multi) Done(o *obs.Observation) {
	for _, ob := range m {
		ob.Done(o)
	}
}
