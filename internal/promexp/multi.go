package promexp

import (
	"io"

	"github.com/facet-sds/facet/internal/s3api"
)

// Multi tells every observer about every request, in order: Prometheus
// and the workload metrics watch the same requests. Nil observers are
// skipped; Body chains each observer's wrapper over the previous one's.
func Multi(observers ...s3api.Observer) s3api.Observer {
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

type multi []s3api.Observer

func (m multi) Started(o *s3api.Observation) {
	for _, ob := range m {
		ob.Started(o)
	}
}

func (m multi) Body(o *s3api.Observation, r io.Reader) io.Reader {
	for _, ob := range m {
		r = ob.Body(o, r)
	}
	return r
}

func (m multi) Done(o *s3api.Observation) {
	for _, ob := range m {
		ob.Done(o)
	}
}
