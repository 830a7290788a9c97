package dataplane

import (
	"bufio"
	"context"
	"io"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/storage"
)

// recordSelector is a GET filter that rewrites an object into the
// records a query selects (filter.Select): the policy-driven push-down for
// clients that only do plain GETs.
type recordSelector interface {
	filter.Transformer
	Query() string
}

// selectorFor returns the select filter in force for a GET of info, if any.
func (p *Plane) selectorFor(t Target, info storage.ObjectInfo) recordSelector {
	for _, st := range p.requestSteps(t, filter.MethodGet, info.Meta.Size, info.Meta) {
		if sel, ok := st.Filter.(recordSelector); ok {
			return sel
		}
	}
	return nil
}

// getSelected answers a GET or HEAD through a select filter: the body is
// the query's result over the object's logical stream, computed as it is
// sent. Its length is not known in advance, and a Range applies to the
// object, not the result: it is ignored, as S3 ignores ranges it cannot
// serve.
func (p *Plane) getSelected(ctx context.Context, req GetRequest, info storage.ObjectInfo, sel recordSelector, res *GetResult) error {
	res.Kind, res.Info, res.Length, res.Query = GetSelected, info, -1, sel.Query()
	if req.Head {
		return nil
	}
	// The cache, when a caching policy is in force, holds the logical
	// object the selection reads.
	rc, err := p.openCached(ctx, req.Target, info, nil, &res.Cache)
	if err != nil {
		return decodeErr(err, info.Bucket, info.Key)
	}
	out, err := sel.Transform(ctx, req.filterRequest(filter.MethodGet, info.Meta.Size, info.Meta), rc)
	if err != nil {
		rc.Close()
		return SelectError(err)
	}
	closeAll := func() error {
		if c, ok := out.(io.Closer); ok {
			// Stops the query if the client goes away mid-stream.
			c.Close()
		}
		return rc.Close()
	}
	// The first result bytes are computed before the answer starts, so a
	// query that fails at once (bad header, malformed first record) is an
	// error response, not a truncated body.
	br := bufio.NewReaderSize(out, 32<<10)
	if _, err := br.Peek(1); err != nil && err != io.EOF {
		closeAll()
		return SelectError(err)
	}
	res.Body = readCloser{Reader: br, close: closeAll}
	return nil
}
