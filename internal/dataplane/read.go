package dataplane

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/facet-sds/facet/internal/obs"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
)

// A GET or HEAD of an object is answered by one of four variants, chosen
// here: one backend read when no request filter can apply (read_oneread.go,
// read_cachemiss.go), else the object's metadata first, then its bytes as
// they are (from the cache when a caching policy holds them), through the
// GET transforms in force (read_transform.go) or through a select filter
// (read_select.go).

// Conditions are a request's preconditions, as HTTP headers give them
// (If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since).
type Conditions struct {
	IfMatch, IfNoneMatch, IfModifiedSince, IfUnmodifiedSince string
}

// Revalidation reports whether c asks if a cached copy is still good
// (If-None-Match, If-Modified-Since): such a request is likely answered
// 304 without a body.
func (c Conditions) Revalidation() bool { return c.IfNoneMatch != "" || c.IfModifiedSince != "" }

// eval applies c with RFC 7232 precedence, as S3 does. A copy source's
// conditions fail as 412, never 304.
func (c Conditions) eval(info storage.ObjectInfo, copySource bool) error {
	lm := info.LastModified.UTC().Truncate(time.Second)
	notModified, failed := s3err.New(s3err.NotModified), s3err.New(s3err.PreconditionFailed)
	if copySource {
		notModified = failed
	}
	if c.IfMatch != "" {
		if !etagMatches(c.IfMatch, info.Meta.ETag) {
			return failed
		}
	} else if v := c.IfUnmodifiedSince; v != "" {
		if t, err := http.ParseTime(v); err == nil && lm.After(t) {
			return failed
		}
	}
	if c.IfNoneMatch != "" {
		if etagMatches(c.IfNoneMatch, info.Meta.ETag) {
			return notModified
		}
	} else if v := c.IfModifiedSince; v != "" {
		if t, err := http.ParseTime(v); err == nil && !lm.After(t) {
			return notModified
		}
	}
	return nil
}

// etagMatches reports whether an If-Match style header lists etag.
func etagMatches(header, etag string) bool {
	for _, c := range strings.Split(header, ",") {
		c = strings.TrimSpace(c)
		if c == "*" || trimETag(c) == etag {
			return true
		}
	}
	return false
}

func trimETag(e string) string {
	e = strings.TrimSpace(e)
	e = strings.TrimPrefix(e, "W/")
	return strings.Trim(e, `"`)
}

// GetRequest is a GET or HEAD of an object.
type GetRequest struct {
	Target
	Conditions Conditions
	// Range is the request's "bytes=" range, "" for none.
	Range string
	// PartNumber asks for one part of a multipart object (0: all).
	PartNumber int
	// Head asks for the answer's description only: nothing is read.
	Head bool
}

// GetKind says what a GET's body is.
type GetKind int

// The kinds of GET answers.
const (
	// GetObject is the object as the client wrote it (or a range of it).
	GetObject GetKind = iota
	// GetTransformed is the object through the GET transforms in force.
	GetTransformed
	// GetSelected is the records a select filter's query selects.
	GetSelected
)

// ContentRange is the part of the answer a partial GET sends; Total is
// -1 when the whole's length is not known (a transformed object).
type ContentRange struct {
	First, Last, Total int64
}

// GetResult is the answer to a GET or HEAD.
type GetResult struct {
	Kind GetKind
	// Info describes the object as answered: a transformed object's ETag
	// is the transformed one. Set with a NotModified error too.
	Info storage.ObjectInfo
	// Whole is set when the answer is the whole stored object's bytes:
	// only then do its stored checksums describe them.
	Whole bool
	// Partial is set for a range's answer.
	Partial *ContentRange
	// Length is the body's length, -1 when not known before it is sent.
	Length int64
	// Transforms names the GET transforms (GetTransformed); Query is the
	// select filter's (GetSelected).
	Transforms string
	Query      string
	// Cache is the cache's outcome when a caching policy is in force,
	// "" otherwise; set with errors too.
	Cache obs.CacheOutcome
	// Unsatisfiable is set with an InvalidRange error for a range the
	// object (Info.Meta.Size bytes) cannot satisfy.
	Unsatisfiable bool
	// Body is the answer's bytes, nil for a HEAD; the caller closes it.
	// Length bytes follow unless reading fails: the status is sent by
	// then, so a failure must cut the answer short.
	Body io.ReadCloser
}

// Get answers a GET or HEAD of an object.
func (p *Plane) Get(ctx context.Context, req GetRequest) (GetResult, error) {
	var res GetResult
	bucket, key := req.Bucket, req.Key
	ctx = pinVersion(ctx, bucket, key, req.VersionID)
	if !req.Head && p.oneReadGet(req) {
		return p.getOneRead(ctx, req)
	}
	// An overwrite may land between HEAD and the ranged read; retry so the
	// range and headers always describe the object that is streamed.
	for attempt := 0; ; attempt++ {
		res = GetResult{Cache: res.Cache}
		info, err := p.backend.HeadObject(ctx, bucket, key)
		if err != nil {
			return res, S3Error(err, bucket, key)
		}
		if tp := p.getTransformsFor(req.Target, info); !tp.Empty() {
			err := p.getTransformed(ctx, req, info, tp, &res)
			if errors.Is(err, errOverwritten) {
				if attempt < 3 {
					continue
				}
				return res, decodeErr(err, bucket, key)
			}
			return res, err
		}
		res.Info = info
		if err := req.Conditions.eval(info, false); err != nil {
			return res, err
		}
		if sel := p.selectorFor(req.Target, info); sel != nil {
			err := p.getSelected(ctx, req, info, sel, &res)
			return res, err
		}
		size := info.Meta.Size
		var rng *storage.Range
		if req.PartNumber > 0 {
			r, err := partRange(info, req.PartNumber)
			if err != nil {
				return res, err
			}
			rng = r
		} else if req.Range != "" {
			r, ok, err := parseRange(req.Range, size)
			if err != nil {
				res.Unsatisfiable = true
				return res, err
			}
			if ok {
				rng = &r
			}
		}
		res.Whole, res.Length = rng == nil, size
		if rng != nil {
			res.Length = rng.Length
			res.Partial = &ContentRange{First: rng.Start, Last: rng.Start + rng.Length - 1, Total: size}
		}
		if req.Head {
			return res, nil
		}
		var fetchRange *storage.Range
		if rng != nil && res.Length > 0 {
			fetchRange = rng
		}
		rc, err := p.openCached(ctx, req.Target, info, fetchRange, &res.Cache)
		if err != nil {
			if attempt < 3 && (errors.Is(err, storage.ErrObjectNotFound) || errors.Is(err, storage.ErrInvalidRange) || errors.Is(err, ErrChanged)) {
				continue
			}
			return res, decodeErr(err, bucket, key)
		}
		body, err := peekDecoded(info, rc, res.Length)
		if err != nil {
			return res, err
		}
		res.Body = body
		return res, nil
	}
}

// peekDecoded decodes the first bytes of a transformed object before the
// answer starts: an object whose stored bytes fail their checks from the
// start is then answered with an error, not a dropped connection. An
// object stored as written is handed on as it is, so that its file can
// be sent as it stands (sendfile).
func peekDecoded(info storage.ObjectInfo, rc io.ReadCloser, length int64) (io.ReadCloser, error) {
	if !Transformed(info.Meta) || length <= 0 {
		return rc, nil
	}
	br := bufio.NewReaderSize(rc, 4096)
	if _, err := br.Peek(1); err != nil {
		rc.Close()
		return nil, decodeErr(err, info.Bucket, info.Key)
	}
	return readCloser{Reader: br, close: rc.Close}, nil
}

// readCloser reads from one reader and closes another (what the reader
// reads from).
type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// WriteTo keeps the reader's own WriteTo (a bufio.Reader's, a sandboxed
// module's output with its large buffer).
func (r readCloser) WriteTo(w io.Writer) (int64, error) {
	if wt, ok := r.Reader.(io.WriterTo); ok {
		return wt.WriteTo(w)
	}
	return io.Copy(w, struct{ io.Reader }{r.Reader})
}

// parseRange resolves a single "bytes=" range against size. ok is false
// when the header should be ignored (S3 ignores syntactically invalid
// ranges and serves the whole object).
func parseRange(header string, size int64) (rng storage.Range, ok bool, err error) {
	first, last, found := rangeBounds(header)
	if !found {
		return rng, false, nil
	}
	if first == "" {
		n, perr := strconv.ParseInt(last, 10, 64)
		if perr != nil || n < 0 {
			return rng, false, nil
		}
		if n == 0 || size == 0 {
			return rng, false, s3err.New(s3err.InvalidRange)
		}
		n = min(n, size)
		return storage.Range{Start: size - n, Length: n}, true, nil
	}
	start, perr := strconv.ParseInt(first, 10, 64)
	if perr != nil || start < 0 {
		return rng, false, nil
	}
	end := size - 1
	if last != "" {
		e, perr := strconv.ParseInt(last, 10, 64)
		if perr != nil || e < start {
			return rng, false, nil
		}
		end = min(e, size-1)
	}
	if start >= size {
		return rng, false, s3err.New(s3err.InvalidRange)
	}
	return storage.Range{Start: start, Length: end - start + 1}, true, nil
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

// partRange returns the logical byte range of part n of a multipart
// object (a simple object is one part).
func partRange(info storage.ObjectInfo, n int) (*storage.Range, error) {
	// The backend records stored part sizes; when filters changed the
	// parts, their logical sizes are in the part plans.
	sizes := info.Meta.PartSizes
	plans, err := PartPlansOf(info.Meta.System)
	if err != nil {
		return nil, s3err.Wrap(s3err.InternalError, err)
	}
	if plans != nil {
		sizes = make([]int64, len(plans))
		for i, p := range plans {
			sizes[i] = p.Size
		}
	}
	if len(sizes) == 0 {
		sizes = []int64{info.Meta.Size}
	}
	if n > len(sizes) {
		return nil, s3err.New(s3err.InvalidRange)
	}
	var start int64
	for i := 0; i < n-1; i++ {
		start += sizes[i]
	}
	return &storage.Range{Start: start, Length: sizes[n-1]}, nil
}
