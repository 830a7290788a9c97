package dataplane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"

	"github.com/facet-sds/facet/internal/filter"
)

// GET-side one-way transforms. A reversible filter is undone on GET from
// the object's own recorded plan, whatever the policies say now; a
// non-reversible filter that declares GET (a redaction applied to reads
// only, a watermark) instead rewrites the logical stream on its way out,
// as the policies in force say. Its output is not stored anywhere, so its
// length is not known before it has run: the S3 front end serves it
// chunked (see GetTransforms' users).

// GetTransforms returns the steps of a GET pipeline that rewrite the
// object's logical stream, in the order the bytes meet them: storage
// stage first (nearest the data), then gateway stage. Reversible filters
// (undone by the decoders), request-only filters (caching...) and
// filters that cannot transform are left out.
func (p Pipeline) GetTransforms() Pipeline {
	var out Pipeline
	for _, stage := range []filter.Stage{filter.StageStorage, filter.StageGateway} {
		for _, st := range p.Steps {
			if st.Stage != stage || !getTransform(st.Filter) {
				continue
			}
			out.Steps = append(out.Steps, st)
		}
	}
	return out
}

func getTransform(f filter.Filter) bool {
	if _, ok := f.(filter.RequestOnly); ok {
		return false
	}
	if _, ok := f.(filter.Encoder); ok {
		return false
	}
	if in := f.Info(); in == nil || in.Reversible {
		return false
	}
	_, ok := f.(filter.Transformer)
	return ok
}

// Get streams logical, the object as the client wrote it, through the
// pipeline's transformers in order. Nothing is buffered beyond what each
// filter holds. Closing the returned reader stops every filter that can
// be stopped (a sandboxed module's instance) before its end.
// When p.Observer is set each step's time is reported, as on PUT.
func (p Pipeline) Get(ctx context.Context, req *filter.Request, logical io.Reader) (io.ReadCloser, error) {
	ctx = filter.Scoped(ctx)
	clock := p.clock(filter.MethodGet)
	stream := clock.reader(-1, logical)
	var closers []io.Closer
	for i, st := range p.Steps {
		t, ok := st.Filter.(filter.Transformer)
		if !ok {
			closeAll(closers)
			return nil, fmt.Errorf("filter %s cannot run on GET", st.Filter.Info().Name)
		}
		start := clock.begin()
		out, err := t.Transform(ctx, req, stream)
		if err != nil {
			closeAll(closers)
			return nil, fmt.Errorf("filter %s (%s): %w", st.Filter.Info().Name, st.Policy, err)
		}
		if c, ok := out.(io.Closer); ok && out != stream {
			closers = append(closers, c)
		}
		clock.built(i, start)
		stream = clock.reader(i, out)
	}
	clock.done()
	return &getStream{r: stream, closers: closers}, nil
}

// getStream is the top of a GET transform chain. It keeps the top's
// WriteTo (a sandboxed module's output copies with a large buffer).
type getStream struct {
	r       io.Reader
	closers []io.Closer
}

func (g *getStream) Read(p []byte) (int, error) { return g.r.Read(p) }

func (g *getStream) WriteTo(w io.Writer) (int64, error) {
	if wt, ok := g.r.(io.WriterTo); ok {
		return wt.WriteTo(w)
	}
	return io.Copy(w, struct{ io.Reader }{g.r})
}

// Close stops the chain from its top down.
func (g *getStream) Close() error {
	closeAll(g.closers)
	return nil
}

func closeAll(cs []io.Closer) {
	for i := len(cs) - 1; i >= 0; i-- {
		_ = cs[i].Close()
	}
}

// Names lists the pipeline's filters, in running order.
func (p Pipeline) Names() []string {
	out := make([]string, len(p.Steps))
	for i, st := range p.Steps {
		out[i] = st.Filter.Info().Name
	}
	return out
}

// TransformedETag is the entity tag of an object served through p: it is
// derived from the stored object's ETag and each transform's name,
// version and policy, so it changes when the object or the transforms
// in force do, and never equals the stored bytes' ETag (which does not
// describe what is sent). Parameters are not hashed in: they may be
// secrets, and a change of them is a new policy anyway.
func (p Pipeline) TransformedETag(stored string) string {
	h := sha256.New()
	h.Write([]byte(stored))
	for _, st := range p.Steps {
		in := st.Filter.Info()
		fmt.Fprintf(h, "\x00%s\x00%s\x00%s\x00%s", in.Name, strconv.Itoa(in.Version), st.Policy, st.Stage)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}
