package dataplane

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
)

// GET-side one-way filters (Pipeline.GetTransforms): the body of a GET is
// the object's logical stream run through the non-reversible filters the
// policies in force declare for GET. What clients see:
//
//   - No length taken from the stored object: the body is sent chunked,
//     unless the whole output fits in the first read-ahead
//     (peekTransformed), when its exact length is known and sent.
//   - ETag: derived from the stored ETag and the transforms in force
//     (Pipeline.TransformedETag); If-Match and If-None-Match compare
//     against it. Stored checksums and the parts count are not sent: they
//     describe other bytes.
//   - Range applies to the transformed stream (what this client reads as
//     the object): the transform runs from the start and the bytes before
//     the range are dropped, so a range costs as much as a GET up to its
//     end. The answer is partial with a total that is unknown. A range
//     starting past the output's end is InvalidRange. A suffix range
//     (bytes=-N), an open range (bytes=N-) whose output runs past the
//     read-ahead, and partNumber need the output's length or the stored
//     parts: NotImplemented, saying why. A closed range whose output ends
//     early is cut unless it ended within the read-ahead, when the
//     answer's range says where it ended.
//   - HEAD runs no filter: it answers the description above without a
//     length.
//   - Nothing reads past a GET transform: SelectObjectContent and a select
//     filter over an object a GET transform applies to are refused
//     (NotImplemented), as they would query what the filter hides.

// peekTransformed is how much output is computed before the answer
// starts: a filter that fails at once is an error response rather than a
// cut connection, and an output shorter than this gets an exact length.
const peekTransformed = 256 << 10

// getTransformsFor returns the one-way transforms in force for a GET of
// info, or an empty pipeline. A select filter is not one of them: it has
// its own path (getSelected), which a GET transform must not be bypassed
// by (getTransformed refuses the two together).
func (p *Plane) getTransformsFor(t Target, info storage.ObjectInfo) Pipeline {
	steps := p.requestSteps(t, filter.MethodGet, info.Meta.Size, info.Meta)
	steps = slices.DeleteFunc(steps, func(st Step) bool {
		_, sel := st.Filter.(recordSelector)
		return sel
	})
	tp := Pipeline{Steps: steps}.GetTransforms()
	// Timed as the decoders are (facet_filter_seconds_total, method GET).
	tp.Observer = p.decoders.Observer
	return tp
}

// bypassesTransforms refuses a request that would read an object's
// logical bytes past the GET transforms in force for it (a selection of
// what a redaction filter hides), naming what it asked for.
func (p *Plane) bypassesTransforms(t Target, info storage.ObjectInfo, what string) error {
	tp := p.getTransformsFor(t, info)
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

// errOverwritten is getTransformed's answer when the object changed
// between its metadata read and its data read, before anything was sent.
var errOverwritten = errors.New("object changed while it was opened")

// getTransformed answers a GET or HEAD whose body goes through tp.
func (p *Plane) getTransformed(ctx context.Context, req GetRequest, info storage.ObjectInfo, tp Pipeline, res *GetResult) error {
	view := info
	view.Meta.ETag = tp.TransformedETag(info.Meta.ETag)
	res.Kind, res.Info, res.Length = GetTransformed, view, -1
	if err := req.Conditions.eval(view, false); err != nil {
		return err
	}
	names := strings.Join(tp.Names(), ",")
	res.Transforms = names
	if sel := p.selectorFor(req.Target, info); sel != nil {
		return s3err.Newf(s3err.NotImplemented, "A select filter and the GET filter %s both apply to this object: the selection would read past %s.", names, names)
	}
	if req.PartNumber > 0 {
		return s3err.Newf(s3err.NotImplemented, "partNumber cannot be served through the GET filter %s: parts are the stored object's, not the transformed one's.", names)
	}
	var rng openRange
	ranged := false
	if req.Range != "" && !req.Head {
		r, ok, err := parseOpenRange(req.Range)
		if err != nil {
			return err
		}
		rng, ranged = r, ok
	}
	if req.Head {
		return nil
	}
	fail := func(err error) error { return decodeErr(err, info.Bucket, info.Key) }
	rc, err := p.openCached(ctx, req.Target, info, nil, &res.Cache)
	if err != nil {
		if errors.Is(err, storage.ErrObjectNotFound) || errors.Is(err, ErrChanged) {
			// Overwritten or deleted since its metadata was read: Get
			// starts again from the metadata.
			return fmt.Errorf("%w: %w", errOverwritten, err)
		}
		return fail(err)
	}
	out, err := tp.Get(ctx, req.filterRequest(filter.MethodGet, info.Meta.Size, info.Meta), rc)
	if err != nil {
		rc.Close()
		return fail(err)
	}
	closeBoth := func() error {
		out.Close()
		return rc.Close()
	}
	var body io.Reader = out
	want := int64(-1) // bytes to send, -1 for all that comes
	if ranged {
		if skipped, err := io.CopyN(io.Discard, out, rng.start); err != nil {
			closeBoth()
			if errors.Is(err, io.EOF) {
				return s3err.Newf(s3err.InvalidRange, "The range starts at byte %d; the transformed object has %d bytes.", rng.start, skipped)
			}
			return fail(err)
		}
		if rng.end >= 0 {
			want = rng.end - rng.start + 1
			body = io.LimitReader(out, want)
		}
	}
	// Compute the first output before the answer starts.
	peekN := peekTransformed
	if want >= 0 && want < int64(peekN) {
		peekN = int(want)
	}
	br := bufio.NewReaderSize(body, max(peekN, 16))
	head, err := br.Peek(peekN)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		closeBoth()
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
			closeBoth()
			return s3err.Newf(s3err.InvalidRange, "The range starts at byte %d; the transformed object ends there.", rng.start)
		}
		var last int64
		switch {
		case known >= 0:
			last = rng.start + known - 1
		case rng.end >= 0:
			last = rng.end
		default:
			// An open range over a long output: the answer must name its
			// last byte, which is not known before the filter ends.
			closeBoth()
			return s3err.Newf(s3err.NotImplemented, "The transformed object goes on for over %d bytes past byte %d, and an open range (bytes=N-) needs its last byte before the filter has run. Ask for bytes=N-M.", peekTransformed, rng.start)
		}
		res.Partial = &ContentRange{First: rng.start, Last: last, Total: -1}
	}
	switch {
	case known >= 0:
		res.Length = known
	case want >= 0:
		// A shorter output must cut the answer (the caller checks the
		// length), so the length the range asks for is the one sent.
		res.Length = want
	}
	res.Body = readCloser{Reader: br, close: closeBoth}
	return nil
}
