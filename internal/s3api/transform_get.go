package s3api

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/facet-sds/facet/internal/dataplane"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
)

// GET-side one-way filters (dataplane.Pipeline.GetTransforms): the body
// of a GET is the object's logical stream run through the non-reversible
// filters the policies in force declare for GET. What S3 clients see:
//
//   - No Content-Length taken from the stored object: the body is sent
//     chunked, unless the whole output fits in the first read-ahead
//     (peekTransformed), when its exact length is known and sent.
//   - ETag: derived from the stored ETag and the transforms in force
//     (dataplane.Pipeline.TransformedETag); If-Match and If-None-Match
//     compare against it. Stored checksums and the parts count are not
//     sent: they describe other bytes.
//   - Range applies to the transformed stream (what this client reads as
//     the object): the transform runs from the start and the bytes before
//     the range are dropped, so a range costs as much as a GET up to its
//     end. The answer is 206 with "Content-Range: bytes A-B/*" (the total
//     is unknown). A range starting past the output's end is 416
//     InvalidRange. A suffix range (bytes=-N), an open range (bytes=N-)
//     whose output runs past the read-ahead, and partNumber need the
//     output's length or the stored parts: 501 NotImplemented, saying
//     why. A closed range whose output ends early is cut (the connection
//     is aborted) unless it ended within the read-ahead, when the
//     Content-Range says where it ended.
//   - HEAD runs no filter: it answers the headers above without a length.
//   - Nothing reads past a GET transform: SelectObjectContent and a select
//     filter over an object a GET transform applies to are refused (501
//     NotImplemented), as they would query what the filter hides.

// peekTransformed is how much output is computed before the status line:
// a filter that fails at once is an error response rather than a cut
// connection, and an output shorter than this gets an exact length.
const peekTransformed = 256 << 10

// getTransformsFor returns the one-way transforms in force for a GET of
// info, or an empty pipeline. A select filter is not one of them: it has
// its own path (serveSelected), which a GET transform must not be
// bypassed by (serveTransformed refuses the two together).
func (s *Server) getTransformsFor(req *request, info storage.ObjectInfo) dataplane.Pipeline {
	steps := s.requestSteps(req, filter.MethodGet, info.Meta.Size, info.Meta)
	steps = slices.DeleteFunc(steps, func(st dataplane.Step) bool {
		_, sel := st.Filter.(recordSelector)
		return sel
	})
	tp := dataplane.Pipeline{Steps: steps}.GetTransforms()
	// Timed as the decoders are (facet_filter_seconds_total, method GET).
	tp.Observer = s.decoders.Observer
	return tp
}

// bypassesTransforms refuses a request that would read an object's
// logical bytes past the GET transforms in force for it (a selection of
// what a redaction filter hides), naming what it asked for.
func (s *Server) bypassesTransforms(req *request, info storage.ObjectInfo, what string) error {
	tp := s.getTransformsFor(req, info)
	if tp.Empty() {
		return nil
	}
	return s3err.Newf(s3err.NotImplemented, "The GET filter %s rewrites what this object is read as; %s would read past it, so it is refused.",
		strings.Join(tp.Names(), ","), what)
}

// openRange is a "bytes=" range over a stream of unknown length: end is
// -1 for an open end.
type openRange struct {
	start, end int64
}

// parseOpenRange reads a single range without knowing the length. ok is
// false when there is no usable range (S3 then sends the whole object).
func parseOpenRange(header string) (r openRange, ok bool, err error) {
	first, last, found := rangeBounds(header)
	if !found {
		return r, false, nil
	}
	if first == "" {
		if _, perr := strconv.ParseInt(last, 10, 64); perr != nil {
			return r, false, nil
		}
		return r, false, s3err.Newf(s3err.NotImplemented, "A suffix range cannot be served through a GET filter: the transformed object's length is not known before the filter has run. Ask for bytes=START-END instead.")
	}
	start, perr := strconv.ParseInt(first, 10, 64)
	if perr != nil || start < 0 {
		return r, false, nil
	}
	r = openRange{start: start, end: -1}
	if last != "" {
		e, perr := strconv.ParseInt(last, 10, 64)
		if perr != nil || e < start {
			return openRange{}, false, nil
		}
		r.end = e
	}
	return r, true, nil
}

// rangeBounds splits a single "bytes=FIRST-LAST" range into its two
// bounds, either of which may be empty; found is false for anything else
// (another unit, several ranges), which S3 answers with the whole object.
func rangeBounds(header string) (first, last string, found bool) {
	spec, found := strings.CutPrefix(strings.TrimSpace(header), "bytes=")
	if !found || strings.Contains(spec, ",") {
		return "", "", false
	}
	return strings.Cut(strings.TrimSpace(spec), "-")
}

// errOverwritten is serveTransformed's answer when the object changed
// between its metadata read and its data read, before anything was sent.
var errOverwritten = errors.New("object changed while it was opened")

// serveTransformed answers a GET or HEAD whose body goes through tp.
func (s *Server) serveTransformed(w http.ResponseWriter, req *request, info storage.ObjectInfo, tp dataplane.Pipeline, partNumber int, withBody bool) error {
	ctx := req.Context()
	view := info
	view.Meta.ETag = tp.TransformedETag(info.Meta.ETag)
	if err := evalConditions(req.Header, view, ""); err != nil {
		if s3e := s3err.As(err); s3e.Code.Status == http.StatusNotModified {
			w.Header().Set("ETag", quoteETag(view.Meta.ETag))
			w.Header().Set("Last-Modified", info.LastModified.UTC().Format(http.TimeFormat))
		}
		return err
	}
	names := strings.Join(tp.Names(), ",")
	if sel := s.selectorFor(req, info); sel != nil {
		return s3err.Newf(s3err.NotImplemented, "A select filter and the GET filter %s both apply to this object: the selection would read past %s.", names, names)
	}
	if partNumber > 0 {
		return s3err.Newf(s3err.NotImplemented, "partNumber cannot be served through the GET filter %s: parts are the stored object's, not the transformed one's.", names)
	}
	var rng openRange
	ranged := false
	if h := req.Header.Get("Range"); h != "" && withBody {
		r, ok, err := parseOpenRange(h)
		if err != nil {
			return err
		}
		rng, ranged = r, ok
	}
	hdr := w.Header()
	writeMetaHeaders(hdr, view)
	hdr.Del("x-amz-mp-parts-count")
	hdr.Set("x-facet-transform", names)
	for q, h := range responseOverrides {
		if v := req.query.Get(q); v != "" {
			hdr.Set(h, v)
		}
	}
	if !withBody {
		w.WriteHeader(http.StatusOK)
		return nil
	}
	fail := func(err error) error {
		resetHeaders(hdr)
		return decodeErr(err, info.Bucket, info.Key)
	}
	rc, err := s.openCached(ctx, req, info, nil)
	if err != nil {
		if errors.Is(err, storage.ErrObjectNotFound) || errors.Is(err, dataplane.ErrChanged) {
			// Overwritten or deleted since its metadata was read: getObject
			// starts again from the metadata.
			resetHeaders(hdr)
			return fmt.Errorf("%w: %w", errOverwritten, err)
		}
		return fail(err)
	}
	defer rc.Close()
	if req.obs.Cache != "" {
		hdr.Set("X-Facet-Cache", string(req.obs.Cache))
	}
	out, err := tp.Get(ctx, req.filterRequest(filter.MethodGet, info.Meta.Size, info.Meta), rc)
	if err != nil {
		return fail(err)
	}
	defer out.Close()
	var body io.Reader = out
	want := int64(-1) // bytes to send, -1 for all that comes
	status := http.StatusOK
	if ranged {
		if skipped, err := io.CopyN(io.Discard, out, rng.start); err != nil {
			if errors.Is(err, io.EOF) {
				resetHeaders(hdr)
				return s3err.Newf(s3err.InvalidRange, "The range starts at byte %d; the transformed object has %d bytes.", rng.start, skipped)
			}
			return fail(err)
		}
		if rng.end >= 0 {
			want = rng.end - rng.start + 1
			body = io.LimitReader(out, want)
		}
		status = http.StatusPartialContent
	}
	// Compute the first output before the status line.
	peekN := peekTransformed
	if want >= 0 && want < int64(peekN) {
		peekN = int(want)
	}
	br := bufio.NewReaderSize(body, max(peekN, 16))
	head, err := br.Peek(peekN)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return fail(err)
	}
	// The output's length is known when it ended within the peek, or when
	// the range is no longer than the peek and the peek filled it.
	known := int64(-1)
	if errors.Is(err, io.EOF) || want >= 0 && int64(len(head)) == want {
		known = int64(len(head))
	}
	if ranged {
		if len(head) == 0 {
			resetHeaders(hdr)
			return s3err.Newf(s3err.InvalidRange, "The range starts at byte %d; the transformed object ends there.", rng.start)
		}
		var last int64
		switch {
		case known >= 0:
			last = rng.start + known - 1
		case rng.end >= 0:
			last = rng.end
		default:
			// An open range over a long output: Content-Range must name
			// the last byte, which is not known before the filter ends.
			resetHeaders(hdr)
			return s3err.Newf(s3err.NotImplemented, "The transformed object goes on for over %d bytes past byte %d, and an open range (bytes=N-) needs its last byte before the filter has run. Ask for bytes=N-M.", peekTransformed, rng.start)
		}
		hdr.Set("Content-Range", fmt.Sprintf("bytes %d-%d/*", rng.start, last))
	}
	switch {
	case known >= 0:
		hdr.Set("Content-Length", strconv.FormatInt(known, 10))
	case want >= 0:
		// A shorter output aborts the connection (below), so the
		// length the range asks for is the one sent.
		hdr.Set("Content-Length", strconv.FormatInt(want, 10))
	}
	w.WriteHeader(status)
	n, err := io.Copy(w, br)
	if err == nil && ranged && rng.end >= 0 && known < 0 && n != want {
		// Content-Range promised bytes up to rng.end: a shorter output
		// must not pass for the range.
		err = fmt.Errorf("transformed output ended %d bytes into a range of %d", n, want)
	}
	if err != nil {
		s.log.ErrorContext(ctx, "get transform stream failed", "request_id", req.id, "bucket", info.Bucket, "filters", names, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}
