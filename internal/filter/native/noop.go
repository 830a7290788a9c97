package native

import (
	"context"
	"fmt"
	"io"

	"github.com/facet-sds/facet/internal/filter"
)

// The noop filter passes bytes through unchanged. It exists to measure
// what the framework itself costs per filter: planning, the record in the
// reverse plan, one more layer of Source on GET.
const (
	noopName    = "noop"
	noopVersion = 1
)

var (
	_ filter.Reversible  = (*noop)(nil)
	_ filter.Transformer = (*noop)(nil)
)

type noop struct{ info *filter.Info }

func NoopInfo() *filter.Info {
	in := &filter.Info{
		Name:       noopName,
		Version:    noopVersion,
		Kind:       "native",
		Methods:    []filter.Method{filter.MethodPut, filter.MethodGet},
		Stages:     []filter.Stage{filter.StageGateway, filter.StageStorage},
		Reversible: true,
		Doc:        "Passes bytes through unchanged; measures the per-filter overhead of a pipeline.",
	}
	in.Config = func() filter.Provisioner { return &noopConfig{info: in} }
	return in
}

// noopConfig is the noop filter's configuration: it takes no parameters.
type noopConfig struct{ info *filter.Info }

var _ filter.Provisioner = (*noopConfig)(nil)

func (c *noopConfig) Provision(filter.Env) (filter.Filter, error) { return &noop{info: c.info}, nil }

func (f *noop) Info() *filter.Info { return f.info }

// Encode hands plain on without copying. The one wrapper counts bytes:
// a record must state the size the filter produced (the reverse plan
// refuses unknown sizes), and only the stream itself knows it.
func (f *noop) Encode(_ context.Context, _ *filter.Request, plain io.Reader) (io.Reader, func() (filter.Record, error), error) {
	c := &countingReader{r: plain}
	rec := func() (filter.Record, error) {
		if !c.eof {
			return filter.Record{}, fmt.Errorf("%s: record requested before the stream reached EOF", noopName)
		}
		return filter.Record{Filter: noopName, Version: noopVersion, Size: c.n}, nil
	}
	return c, rec, nil
}

// Decode returns src itself: there is nothing to undo.
func (f *noop) Decode(_ context.Context, _ *filter.Request, rec filter.Record, src filter.Source) (filter.Source, error) {
	if err := checkRecord(rec, noopName, noopVersion); err != nil {
		return nil, err
	}
	if src.Size() != rec.Size {
		return nil, fmt.Errorf("%s: stored stream holds %d bytes, record says %d: %w", noopName, src.Size(), rec.Size, filter.ErrIntegrity)
	}
	return src, nil
}

// Transform returns in itself, for GET-side and non-reversible use.
func (f *noop) Transform(_ context.Context, _ *filter.Request, in io.Reader) (io.Reader, error) {
	return in, nil
}

// countingReader counts what passes through it and notes io.EOF.
type countingReader struct {
	r   io.Reader
	n   int64
	eof bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err == io.EOF {
		c.eof = true
	}
	return n, err
}

// checkRecord verifies that rec was written by the named filter at a
// version this code can undo.
func checkRecord(rec filter.Record, name string, version int) error {
	if rec.Filter != name {
		return fmt.Errorf("%s: asked to undo a record of filter %q: %w", name, rec.Filter, filter.ErrIntegrity)
	}
	if rec.Version < 1 || rec.Version > version {
		return fmt.Errorf("%s: record version %d, this server undoes 1..%d", name, rec.Version, version)
	}
	if rec.Size < 0 {
		return fmt.Errorf("%s: record size %d: %w", name, rec.Size, filter.ErrIntegrity)
	}
	return nil
}
