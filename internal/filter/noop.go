package filter

import (
	"context"
	"fmt"
	"io"
)

// The noop filter passes bytes through unchanged. It exists to measure
// what the framework itself costs per filter: planning, the record in the
// reverse plan, one more layer of Source on GET.
const (
	noopName    = "noop"
	noopVersion = 1
)

var (
	_ Reversible  = (*noop)(nil)
	_ Transformer = (*noop)(nil)
)

type noop struct{ info *Info }

func noopInfo() *Info {
	in := &Info{
		Name:       noopName,
		Version:    noopVersion,
		Kind:       "native",
		Methods:    []Method{MethodPut, MethodGet},
		Stages:     []Stage{StageGateway, StageStorage},
		Reversible: true,
		Doc:        "Passes bytes through unchanged; measures the per-filter overhead of a pipeline.",
	}
	in.New = func(p Params, _ Env) (Filter, error) {
		if _, err := resolveParams(in, p); err != nil {
			return nil, err
		}
		return &noop{info: in}, nil
	}
	return in
}

func (f *noop) Info() *Info { return f.info }

// Encode hands plain on without copying. The one wrapper counts bytes:
// a record must state the size the filter produced (the reverse plan
// refuses unknown sizes), and only the stream itself knows it.
func (f *noop) Encode(_ context.Context, _ *Request, plain io.Reader) (io.Reader, func() (Record, error), error) {
	c := &countingReader{r: plain}
	rec := func() (Record, error) {
		if !c.eof {
			return Record{}, fmt.Errorf("%s: record requested before the stream reached EOF", noopName)
		}
		return Record{Filter: noopName, Version: noopVersion, Size: c.n}, nil
	}
	return c, rec, nil
}

// Decode returns src itself: there is nothing to undo.
func (f *noop) Decode(_ context.Context, _ *Request, rec Record, src Source) (Source, error) {
	if err := checkRecord(rec, noopName, noopVersion); err != nil {
		return nil, err
	}
	if src.Size() != rec.Size {
		return nil, fmt.Errorf("%s: stored stream holds %d bytes, record says %d: %w", noopName, src.Size(), rec.Size, ErrIntegrity)
	}
	return src, nil
}

// Transform returns in itself, for GET-side and non-reversible use.
func (f *noop) Transform(_ context.Context, _ *Request, in io.Reader) (io.Reader, error) {
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
func checkRecord(rec Record, name string, version int) error {
	if rec.Filter != name {
		return fmt.Errorf("%s: asked to undo a record of filter %q: %w", name, rec.Filter, ErrIntegrity)
	}
	if rec.Version < 1 || rec.Version > version {
		return fmt.Errorf("%s: record version %d, this server undoes 1..%d", name, rec.Version, version)
	}
	if rec.Size < 0 {
		return fmt.Errorf("%s: record size %d: %w", name, rec.Size, ErrIntegrity)
	}
	return nil
}
