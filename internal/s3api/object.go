package s3api

import (
	"bufio"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/facet-sds/facet/internal/dataplane"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
)

func itoa(n int) string { return strconv.Itoa(n) }

// storageErr maps a backend error to its S3 error.
func storageErr(err error, bucket, key string) error {
	var e *s3err.Error
	var ff filter.Failure
	switch {
	case err == nil:
		return nil
	case errors.As(err, &e):
		return e
	case errors.As(err, &ff):
		return &s3err.Error{Code: s3err.FilterFailed, Bucket: bucket, Key: key, Message: ff.Error(), Err: err}
	case errors.Is(err, dataplane.ErrFilterUnavailable):
		// Still an internal error, which clients retry: a node that has
		// not loaded a new filter yet will. The message names the filter.
		return &s3err.Error{Code: s3err.InternalError, Bucket: bucket, Key: key, Message: err.Error(), Err: err}
	case errors.Is(err, storage.ErrBucketNotFound):
		return &s3err.Error{Code: s3err.NoSuchBucket, Bucket: bucket, Err: err}
	case errors.Is(err, storage.ErrBucketNotEmpty):
		return &s3err.Error{Code: s3err.BucketNotEmpty, Bucket: bucket, Err: err}
	case errors.Is(err, storage.ErrObjectNotFound):
		return &s3err.Error{Code: s3err.NoSuchKey, Bucket: bucket, Key: key, Err: err}
	case errors.Is(err, storage.ErrUploadNotFound):
		return &s3err.Error{Code: s3err.NoSuchUpload, Bucket: bucket, Key: key, Err: err}
	case errors.Is(err, storage.ErrInvalidPart):
		return &s3err.Error{Code: s3err.InvalidPart, Bucket: bucket, Key: key, Err: err}
	case errors.Is(err, storage.ErrInvalidPartOrder):
		return &s3err.Error{Code: s3err.InvalidPartOrder, Bucket: bucket, Key: key, Err: err}
	case errors.Is(err, storage.ErrInvalidRange):
		return &s3err.Error{Code: s3err.InvalidRange, Bucket: bucket, Key: key, Err: err}
	case errors.Is(err, storage.ErrKeyTooLong):
		return &s3err.Error{Code: s3err.KeyTooLongError, Bucket: bucket, Key: key, Err: err}
	case errors.Is(err, storage.ErrInvalidKey):
		return &s3err.Error{Code: s3err.InvalidArgument, Bucket: bucket, Key: key, Err: err}
	case errors.Is(err, storage.ErrUnavailable):
		return &s3err.Error{Code: s3err.SlowDown, Bucket: bucket, Key: key, Err: err}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &s3err.Error{Code: s3err.IncompleteBody, Bucket: bucket, Key: key, Err: err}
	case errors.Is(err, context.Canceled):
		return &s3err.Error{Code: s3err.IncompleteBody, Bucket: bucket, Key: key, Err: err}
	}
	return &s3err.Error{Code: s3err.InternalError, Bucket: bucket, Key: key, Err: err}
}

// declaredLength is the payload size the client promised: the decoded
// length of an aws-chunked body, else Content-Length.
func declaredLength(req *request) (int64, error) {
	if n := req.body.DecodedLength(); n >= 0 {
		return n, nil
	}
	if req.ContentLength >= 0 {
		return req.ContentLength, nil
	}
	return -1, s3err.New(s3err.MissingContentLength)
}

// receivePayload wraps the request body for storage: it verifies digests
// and the declared length, and its seal completes the object's ETag, size
// and checksums once the stream has ended. obj describes the object the
// body belongs to, for the filter pipeline (for a part: its upload's).
func (s *Server) receivePayload(req *request, limit int64, meta, obj storage.ObjectMeta) (storage.PutInput, error) {
	size, err := declaredLength(req)
	if err != nil {
		return storage.PutInput{}, err
	}
	if size > limit {
		return storage.PutInput{}, s3err.Newf(s3err.EntityTooLarge, "Your proposed upload exceeds the maximum allowed size of %d bytes", limit)
	}
	p, err := newPayload(req, size)
	if err != nil {
		return storage.PutInput{}, err
	}
	// The backend reads to EOF or fails; either way the payload is done
	// with once the handler returns.
	req.onDone(func() { _ = p.Close() })
	body, sealPlan, err := s.encodeForStorage(req, size, obj, req.putHooks.tap(s.observer.Body(&req.obs, &countingBody{r: p, o: &req.obs})))
	if err != nil {
		return storage.PutInput{}, err
	}
	return storage.PutInput{
		Body: body,
		Meta: meta,
		Seal: func(m *storage.ObjectMeta) error {
			if got := p.Size(); got != size {
				return s3err.Newf(s3err.IncompleteBody, "You did not provide the number of bytes specified (%d), got %d", size, got)
			}
			m.Size = size
			m.ETag = p.MD5Hex()
			if ck := p.Checksums(); len(ck) > 0 {
				m.Checksums = ck
				m.ChecksumType = "FULL_OBJECT"
			}
			if err := sealPlan(m); err != nil {
				return err
			}
			return req.putHooks.seal(req, m)
		},
	}, nil
}

func writeChecksumHeaders(h http.Header, ck map[string]string) {
	for alg, v := range ck {
		h.Set("x-amz-checksum-"+strings.ToLower(alg), v)
	}
}

func (s *Server) putObject(w http.ResponseWriter, req *request) error {
	meta, err := metaFromHeaders(req.Header)
	if err != nil {
		return err
	}
	if err := s.checkPutPreconditions(req); err != nil {
		return err
	}
	size, _ := declaredLength(req)
	if req.putHooks, err = s.prepareMeta(req, &meta, size, true); err != nil {
		return err
	}
	in, err := s.receivePayload(req, s.maxPut, meta, meta)
	if err != nil {
		return err
	}
	info, err := s.backend.PutObject(writeContext(req), req.target.bucket, req.target.key, in)
	s.changed(req.target.bucket, req.target.key)
	if err != nil {
		return storageErr(err, req.target.bucket, req.target.key)
	}
	req.putHooks.committed(info)
	w.Header().Set("ETag", quoteETag(info.Meta.ETag))
	writeChecksumHeaders(w.Header(), info.Meta.Checksums)
	w.WriteHeader(http.StatusOK)
	return nil
}

// checkPutPreconditions implements conditional writes: If-None-Match: *
// refuses to overwrite, If-Match requires the current ETag.
func (s *Server) checkPutPreconditions(req *request) error {
	inm, im := req.Header.Get("If-None-Match"), req.Header.Get("If-Match")
	if inm == "" && im == "" {
		return nil
	}
	info, err := s.backend.HeadObject(req.Context(), req.target.bucket, req.target.key)
	exists := err == nil
	if err != nil && !errors.Is(err, storage.ErrObjectNotFound) {
		return storageErr(err, req.target.bucket, req.target.key)
	}
	if inm != "" && exists && (strings.TrimSpace(inm) == "*" || etagMatches(inm, info.Meta.ETag)) {
		return s3err.New(s3err.PreconditionFailed)
	}
	if im != "" {
		if !exists {
			return s3err.New(s3err.NoSuchKey)
		}
		if !etagMatches(im, info.Meta.ETag) {
			return s3err.New(s3err.PreconditionFailed)
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

// evalConditions applies If-Match, If-None-Match, If-Modified-Since and
// If-Unmodified-Since with RFC 7232 precedence, as S3 does.
func evalConditions(h http.Header, info storage.ObjectInfo, prefix string) error {
	get := func(k string) string { return h.Get(prefix + k) }
	lm := info.LastModified.UTC().Truncate(time.Second)
	im, inm := get("If-Match"), get("If-None-Match")
	notModified, failed := s3err.New(s3err.NotModified), s3err.New(s3err.PreconditionFailed)
	if prefix != "" {
		// Copy-source conditions fail as 412, never 304.
		notModified = failed
	}
	if im != "" {
		if !etagMatches(im, info.Meta.ETag) {
			return failed
		}
	} else if v := get("If-Unmodified-Since"); v != "" {
		if t, err := http.ParseTime(v); err == nil && lm.After(t) {
			return failed
		}
	}
	if inm != "" {
		if etagMatches(inm, info.Meta.ETag) {
			return notModified
		}
	} else if v := get("If-Modified-Since"); v != "" {
		if t, err := http.ParseTime(v); err == nil && !lm.After(t) {
			return notModified
		}
	}
	return nil
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

// responseOverrides are the query parameters that override response
// headers of GetObject.
var responseOverrides = map[string]string{
	"response-content-type":        "Content-Type",
	"response-content-language":    "Content-Language",
	"response-expires":             "Expires",
	"response-cache-control":       "Cache-Control",
	"response-content-disposition": "Content-Disposition",
	"response-content-encoding":    "Content-Encoding",
}

func (s *Server) getObject(w http.ResponseWriter, req *request, withBody bool) error {
	ctx := req.Context()
	bucket, key := req.target.bucket, req.target.key
	partNumber := 0
	if v := req.query.Get("partNumber"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPartNumber {
			return s3err.Newf(s3err.InvalidArgument, "Part number must be an integer between 1 and 10000, inclusive")
		}
		partNumber = n
	}
	if withBody && s.oneReadGet(req, partNumber) {
		return s.getOneRead(w, req)
	}
	// An overwrite may land between HEAD and the ranged read; retry so the
	// range and headers always describe the object that is streamed.
	for attempt := 0; ; attempt++ {
		info, err := s.backend.HeadObject(ctx, bucket, key)
		if err != nil {
			return storageErr(err, bucket, key)
		}
		if tp := s.getTransformsFor(req, info); !tp.Empty() {
			err := s.serveTransformed(w, req, info, tp, partNumber, withBody)
			if errors.Is(err, errOverwritten) {
				if attempt < 3 {
					continue
				}
				return decodeErr(err, bucket, key)
			}
			return err
		}
		if err := checkGetConditions(w, req, info); err != nil {
			return err
		}
		if sel := s.selectorFor(req, info); sel != nil {
			return s.serveSelected(w, req, info, sel, withBody)
		}
		size := info.Meta.Size
		var rng *storage.Range
		if partNumber > 0 {
			r, err := partRange(info, partNumber)
			if err != nil {
				return err
			}
			rng = r
		} else if h := req.Header.Get("Range"); h != "" {
			r, ok, err := parseRange(h, size)
			if err != nil {
				w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", size))
				return err
			}
			if ok {
				rng = &r
			}
		}
		hdr := w.Header()
		writeGetHeaders(hdr, req, info, rng == nil)
		status, length := http.StatusOK, size
		if rng != nil {
			status, length = http.StatusPartialContent, rng.Length
			hdr.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", rng.Start, rng.Start+rng.Length-1, size))
		}
		hdr.Set("Content-Length", strconv.FormatInt(length, 10))
		if !withBody {
			w.WriteHeader(status)
			return nil
		}
		var fetchRange *storage.Range
		if rng != nil && length > 0 {
			fetchRange = rng
		}
		rc, err := s.openCached(ctx, req, info, fetchRange)
		if err != nil {
			if attempt < 3 && (errors.Is(err, storage.ErrObjectNotFound) || errors.Is(err, storage.ErrInvalidRange) || errors.Is(err, dataplane.ErrChanged)) {
				continue
			}
			resetHeaders(w.Header())
			return decodeErr(err, bucket, key)
		}
		defer rc.Close()
		if req.obs.Cache != "" {
			w.Header().Set("X-Facet-Cache", string(req.obs.Cache))
		}
		return s.sendObject(w, req, info, rc, status, length)
	}
}

// checkGetConditions evaluates a GET's or HEAD's conditions against info;
// a 304 carries the object's ETag and Last-Modified.
func checkGetConditions(w http.ResponseWriter, req *request, info storage.ObjectInfo) error {
	err := evalConditions(req.Header, info, "")
	if err != nil {
		if s3e := s3err.As(err); s3e.Code.Status == http.StatusNotModified {
			w.Header().Set("ETag", quoteETag(info.Meta.ETag))
			w.Header().Set("Last-Modified", info.LastModified.UTC().Format(http.TimeFormat))
		}
	}
	return err
}

// writeGetHeaders sets the object headers of a GET or HEAD answer (all
// but its length and range); whole says the answer is the whole object,
// which alone carries the stored checksums.
func writeGetHeaders(hdr http.Header, req *request, info storage.ObjectInfo, whole bool) {
	writeMetaHeaders(hdr, info)
	if strings.EqualFold(req.Header.Get("x-amz-checksum-mode"), "ENABLED") && whole {
		writeChecksumHeaders(hdr, info.Meta.Checksums)
		if info.Meta.ChecksumType != "" {
			hdr.Set("x-amz-checksum-type", info.Meta.ChecksumType)
		}
	}
	for q, h := range responseOverrides {
		if v := req.query.Get(q); v != "" {
			hdr.Set(h, v)
		}
	}
}

// sendObject sends the status line and the length bytes of rc, the
// logical bytes of info the headers describe.
func (s *Server) sendObject(w http.ResponseWriter, req *request, info storage.ObjectInfo, rc io.Reader, status int, length int64) error {
	body := rc
	if dataplane.Transformed(info.Meta) && length > 0 {
		// Decode the first bytes before the status line: an object whose
		// stored bytes fail their checks from the start is then answered
		// with an error, not a dropped connection.
		br := bufio.NewReaderSize(rc, 4096)
		if _, err := br.Peek(1); err != nil {
			resetHeaders(w.Header())
			return decodeErr(err, info.Bucket, info.Key)
		}
		body = br
	}
	w.WriteHeader(status)
	n, err := io.Copy(w, body)
	if err == nil && n != length {
		err = fmt.Errorf("short read from backend: %d of %d bytes", n, length)
	}
	if err != nil {
		// The status line is gone; abort the connection so the client
		// sees a truncated body rather than a silently short object.
		s.log.ErrorContext(req.Context(), "get object stream failed", "request_id", req.id, "bucket", info.Bucket, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// resetHeaders drops the object headers prepared for a response that
// turned into an error.
func resetHeaders(h http.Header) {
	for k := range h {
		switch k {
		case "X-Amz-Request-Id", "X-Amz-Id-2", "Server":
		default:
			delete(h, k)
		}
	}
}

// partRange returns the byte range of part n of a multipart object (a
// simple object is one part).
func partRange(info storage.ObjectInfo, n int) (*storage.Range, error) {
	// The backend records stored part sizes; when filters changed the
	// parts, their logical sizes are in the part plans.
	sizes := info.Meta.PartSizes
	plans, err := dataplane.PartPlansOf(info.Meta.System)
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

func (s *Server) deleteObject(w http.ResponseWriter, req *request) error {
	err := s.deleteKept(req, req.target.bucket, req.target.key)
	s.changed(req.target.bucket, req.target.key)
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// copySource parses x-amz-copy-source ("/bucket/key" or "bucket/key",
// URL-encoded, optionally with ?versionId=).
func copySource(h string) (bucket, key string, err error) {
	h, _, _ = strings.Cut(h, "?versionId=")
	h = strings.TrimPrefix(h, "/")
	rawBucket, rawKey, ok := strings.Cut(h, "/")
	if !ok || rawKey == "" {
		return "", "", s3err.Newf(s3err.InvalidArgument, "Copy Source must mention the source bucket and key: sourcebucket/sourcekey")
	}
	if bucket, err = url.PathUnescape(rawBucket); err == nil {
		key, err = url.PathUnescape(rawKey)
	}
	if err != nil {
		return "", "", s3err.Newf(s3err.InvalidArgument, "Invalid copy source encoding")
	}
	return bucket, key, validateKey(key)
}

// openCopySource authorizes and opens the source of a copy, checking the
// x-amz-copy-source-if-* conditions.
func (s *Server) openCopySource(req *request, rng func(info storage.ObjectInfo) (*storage.Range, error)) (io.ReadCloser, storage.ObjectInfo, *storage.Range, error) {
	srcBucket, srcKey, err := copySource(req.Header.Get("x-amz-copy-source"))
	if err != nil {
		return nil, storage.ObjectInfo{}, nil, err
	}
	ctx := req.Context()
	if err := s.authorizeBucket(ctx, req.tenant, srcBucket); err != nil {
		return nil, storage.ObjectInfo{}, nil, err
	}
	info, err := s.backend.HeadObject(ctx, srcBucket, srcKey)
	if err != nil {
		return nil, storage.ObjectInfo{}, nil, storageErr(err, srcBucket, srcKey)
	}
	if err := evalConditions(req.Header, info, "x-amz-copy-source-"); err != nil {
		return nil, storage.ObjectInfo{}, nil, err
	}
	// A copy reads the source as a GET of it does.
	src := *req
	src.target.bucket, src.target.key = srcBucket, srcKey
	if err := s.bypassesTransforms(&src, info, "a copy"); err != nil {
		return nil, storage.ObjectInfo{}, nil, err
	}
	var r *storage.Range
	if rng != nil {
		if r, err = rng(info); err != nil {
			return nil, storage.ObjectInfo{}, nil, err
		}
	}
	rc, err := s.openLogical(ctx, req, info, r)
	if err != nil {
		return nil, storage.ObjectInfo{}, nil, decodeErr(err, srcBucket, srcKey)
	}
	return rc, info, r, nil
}

type copyObjectResult struct {
	XMLName      struct{} `xml:"http://s3.amazonaws.com/doc/2006-03-01/ CopyObjectResult"`
	LastModified string   `xml:"LastModified"`
	ETag         string   `xml:"ETag"`
}

func (s *Server) copyObject(w http.ResponseWriter, req *request) error {
	ctx := req.Context()
	bucket, key := req.target.bucket, req.target.key
	srcBucket, srcKey, err := copySource(req.Header.Get("x-amz-copy-source"))
	if err != nil {
		return err
	}
	directive := strings.ToUpper(req.Header.Get("x-amz-metadata-directive"))
	if directive != "" && directive != "COPY" && directive != "REPLACE" {
		return s3err.Newf(s3err.InvalidArgument, "Unknown metadata directive.")
	}
	var replaced storage.ObjectMeta
	if directive == "REPLACE" {
		if replaced, err = metaFromHeaders(req.Header); err != nil {
			return err
		}
		if _, err = s.prepareMeta(req, &replaced, -1, false); err != nil {
			return err
		}
	}
	if srcBucket == bucket && srcKey == key {
		if directive != "REPLACE" {
			return s3err.Newf(s3err.InvalidRequest, "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.")
		}
		info, err := s.backend.HeadObject(ctx, bucket, key)
		if err != nil {
			return storageErr(err, bucket, key)
		}
		if err := evalConditions(req.Header, info, "x-amz-copy-source-"); err != nil {
			return err
		}
		info.Meta = replaceUserMeta(info.Meta, replaced)
		info, err = s.backend.UpdateMeta(ctx, bucket, key, info.Meta)
		s.changed(bucket, key)
		if err != nil {
			return storageErr(err, bucket, key)
		}
		return writeXML(w, http.StatusOK, copyObjectResult{LastModified: isoTime(info.LastModified), ETag: quoteETag(info.Meta.ETag)})
	}
	rc, src, _, err := s.openCopySource(req, nil)
	if err != nil {
		return err
	}
	defer rc.Close()
	meta := src.Meta
	if directive == "REPLACE" {
		meta = replaceUserMeta(meta, replaced)
	}
	// The copy is what the client wrote, filtered as the destination's
	// policies say now; the source's own reverse plan stays with it.
	meta.System = withoutPlans(meta.System)
	counted := &countingReader{r: rc, h: md5.New()}
	body, sealPlan, err := s.encodeForStorage(req, src.Meta.Size, meta, counted)
	if err != nil {
		return err
	}
	info, err := s.backend.PutObject(writeContext(req), bucket, key, storage.PutInput{Body: body, Meta: meta, Seal: func(m *storage.ObjectMeta) error {
		if counted.n != src.Meta.Size {
			return fmt.Errorf("copy source changed during copy: read %d of %d bytes", counted.n, src.Meta.Size)
		}
		return sealPlan(m)
	}})
	s.changed(bucket, key)
	if err != nil {
		return storageErr(err, bucket, key)
	}
	return writeXML(w, http.StatusOK, copyObjectResult{LastModified: isoTime(info.LastModified), ETag: quoteETag(info.Meta.ETag)})
}

// replaceUserMeta keeps what describes the stored bytes (ETag, size,
// checksums, Facet's system metadata, parts) and takes the client-settable
// fields from repl.
func replaceUserMeta(cur, repl storage.ObjectMeta) storage.ObjectMeta {
	repl.Size, repl.ETag = cur.Size, cur.ETag
	repl.Checksums, repl.ChecksumType = cur.Checksums, cur.ChecksumType
	repl.System, repl.PartsCount, repl.PartSizes = cur.System, cur.PartsCount, cur.PartSizes
	return repl
}

// withoutPlans copies system metadata without reverse plans.
func withoutPlans(sys map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range sys {
		if k != dataplane.PlanKey && k != dataplane.PartsKey {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
