package s3api

import (
	"io"

	"github.com/facet-sds/facet/internal/obs"
)

type noObserver struct{}

func (noObserver) Started(*obs.Observation)                       {}
func (noObserver) Body(_ *obs.Observation, r io.Reader) io.Reader { return r }
func (noObserver) Done(*obs.Observation)                          {}

// countingBody counts payload bytes into the observation.
type countingBody struct {
	r io.Reader
	o *obs.Observation
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.o.BytesIn += int64(n)
	return n, err
}
