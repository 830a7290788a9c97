package s3api

import (
	"bufio"
	"io"
	"net/http"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/storage"
)

// recordSelector is a GET filter that rewrites an object into the
// records a query selects (internal/s3select/selectfilter): the policy-driven push-down for
// clients that only do plain GETs.
type recordSelector interface {
	filter.Transformer
	Query() string
}

// selectorFor returns the select filter in force for a GET of info, if any.
func (s *Server) selectorFor(req *request, info storage.ObjectInfo) recordSelector {
	for _, st := range s.requestSteps(req, filter.MethodGet, info.Meta.Size, info.Meta) {
		if sel, ok := st.Filter.(recordSelector); ok {
			return sel
		}
	}
	return nil
}

// serveSelected answers a GET or HEAD through a select filter: the body is
// the query's result over the object's logical stream, computed as it is
// sent. Its length is not known in advance, so there is no
// Content-Length, and a Range applies to the object, not the result: it is
// ignored, as S3 ignores ranges it cannot serve.
func (s *Server) serveSelected(w http.ResponseWriter, req *request, info storage.ObjectInfo, sel recordSelector, withBody bool) error {
	ctx := req.Context()
	hdr := w.Header()
	writeMetaHeaders(hdr, info)
	hdr.Del("Accept-Ranges")
	hdr.Set("x-facet-select", sel.Query())
	if !withBody {
		w.WriteHeader(http.StatusOK)
		return nil
	}
	// The cache, when a caching policy is in force, holds the logical
	// object the selection reads.
	rc, err := s.openCached(ctx, req, info, nil)
	if err != nil {
		resetHeaders(hdr)
		return decodeErr(err, info.Bucket, info.Key)
	}
	defer rc.Close()
	out, err := sel.Transform(ctx, req.filterRequest(filter.MethodGet, info.Meta.Size, info.Meta), rc)
	if err != nil {
		resetHeaders(hdr)
		return selectErr(err)
	}
	if c, ok := out.(io.Closer); ok {
		// Stops the query if the client goes away mid-stream.
		defer c.Close()
	}
	// The first result bytes are computed before the status line, so a
	// query that fails at once (bad header, malformed first record) is an
	// error response, not a truncated body.
	br := bufio.NewReaderSize(out, 32<<10)
	if _, err := br.Peek(1); err != nil && err != io.EOF {
		resetHeaders(hdr)
		return selectErr(err)
	}
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, br); err != nil {
		s.log.ErrorContext(ctx, "select filter stream failed", "request_id", req.id, "bucket", info.Bucket, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}
