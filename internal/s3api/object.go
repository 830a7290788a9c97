package s3api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/facet-sds/facet/internal/dataplane"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
)

func itoa(n int) string { return strconv.Itoa(n) }

// storageErr maps a backend error to its S3 error: the data plane's
// mapping, the one there is.
func storageErr(err error, bucket, key string) error { return dataplane.S3Error(err, bucket, key) }

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
// and checksums once the stream has ended.
func (s *Server) receivePayload(req *request, limit int64) (dataplane.Payload, error) {
	size, err := declaredLength(req)
	if err != nil {
		return dataplane.Payload{}, err
	}
	if size > limit {
		return dataplane.Payload{}, s3err.Newf(s3err.EntityTooLarge, "Your proposed upload exceeds the maximum allowed size of %d bytes", limit)
	}
	p, err := newPayload(req, size)
	if err != nil {
		return dataplane.Payload{}, err
	}
	// The backend reads to EOF or fails; either way the payload is done
	// with once the handler returns.
	req.onDone(func() { _ = p.Close() })
	return dataplane.Payload{
		Body: s.observer.Body(&req.obs, &countingBody{r: p, o: &req.obs}),
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
			return nil
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
	size, _ := declaredLength(req)
	info, err := s.data.Put(req.Context(), dataplane.PutRequest{
		Target: req.dataTarget(), Meta: meta, Size: size,
		IfMatch: req.Header.Get("If-Match"), IfNoneMatch: req.Header.Get("If-None-Match"),
		Payload: func() (dataplane.Payload, error) { return s.receivePayload(req, s.maxPut) },
	})
	if err != nil {
		return err
	}
	w.Header().Set("ETag", quoteETag(info.Meta.ETag))
	writeVersionHeader(w.Header(), info.VersionID)
	writeChecksumHeaders(w.Header(), info.Meta.Checksums)
	w.WriteHeader(http.StatusOK)
	return nil
}

// conditions reads a request's preconditions; prefix is
// "x-amz-copy-source-" for a copy's conditions on its source.
func conditions(h http.Header, prefix string) dataplane.Conditions {
	return dataplane.Conditions{
		IfMatch: h.Get(prefix + "If-Match"), IfNoneMatch: h.Get(prefix + "If-None-Match"),
		IfModifiedSince: h.Get(prefix + "If-Modified-Since"), IfUnmodifiedSince: h.Get(prefix + "If-Unmodified-Since"),
	}
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
	partNumber := 0
	if v := req.query.Get("partNumber"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPartNumber {
			return s3err.Newf(s3err.InvalidArgument, "Part number must be an integer between 1 and 10000, inclusive")
		}
		partNumber = n
	}
	res, err := s.data.Get(req.Context(), dataplane.GetRequest{
		Target: req.dataTarget(), Conditions: conditions(req.Header, ""),
		Range: req.Header.Get("Range"), PartNumber: partNumber, Head: !withBody,
	})
	req.obs.Cache = res.Cache
	hdr := w.Header()
	if err != nil {
		switch e := s3err.As(err); {
		case e.Code.Status == http.StatusNotModified:
			// A 304 carries the object's ETag and Last-Modified.
			hdr.Set("ETag", quoteETag(res.Info.Meta.ETag))
			hdr.Set("Last-Modified", res.Info.LastModified.UTC().Format(http.TimeFormat))
		case res.Unsatisfiable:
			hdr.Set("Content-Range", fmt.Sprintf("bytes */%d", res.Info.Meta.Size))
		}
		return err
	}
	if res.Body != nil {
		defer res.Body.Close()
	}
	info := res.Info
	switch res.Kind {
	case dataplane.GetTransformed:
		writeMetaHeaders(hdr, info)
		hdr.Del("x-amz-mp-parts-count")
		hdr.Set("x-facet-transform", res.Transforms)
		writeOverrides(hdr, req)
	case dataplane.GetSelected:
		writeMetaHeaders(hdr, info)
		hdr.Del("Accept-Ranges")
		hdr.Set("x-facet-select", res.Query)
	default:
		writeGetHeaders(hdr, req, info, res.Whole)
	}
	status := http.StatusOK
	if r := res.Partial; r != nil {
		status = http.StatusPartialContent
		total := "*"
		if r.Total >= 0 {
			total = strconv.FormatInt(r.Total, 10)
		}
		hdr.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%s", r.First, r.Last, total))
	}
	if res.Length >= 0 {
		hdr.Set("Content-Length", strconv.FormatInt(res.Length, 10))
	}
	if res.Cache != "" && res.Kind != dataplane.GetSelected && res.Body != nil {
		hdr.Set("X-Facet-Cache", string(res.Cache))
	}
	w.WriteHeader(status)
	if res.Body == nil {
		return nil
	}
	n, err := io.Copy(w, res.Body)
	if err == nil && res.Length >= 0 && n != res.Length {
		err = fmt.Errorf("short read: %d of %d bytes", n, res.Length)
	}
	if err != nil {
		// The status line is gone; abort the connection so the client
		// sees a truncated body rather than a silently short object.
		if clientGone(req.Context(), err) {
			// A client that stops reading (a player seeking, a download
			// cancelled) is no failure of the server.
			s.log.InfoContext(req.Context(), "get object: client went away mid-response", "request_id", req.id, "op", string(req.op),
				"bucket", info.Bucket, "sent", n, "err", err.Error())
		} else {
			req.obs.ErrCode = s3err.InternalError.Name
			s.log.ErrorContext(req.Context(), "get object stream failed", "request_id", req.id, "op", string(req.op),
				"bucket", info.Bucket, "answer", res.Kind, "sent", n, "err", err.Error())
		}
		panic(http.ErrAbortHandler)
	}
	return nil
}

// clientGone reports whether a response failed because its client went
// away (the connection reset or closed, the request cancelled), rather
// than because its source failed.
func clientGone(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, net.ErrClosed)
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
	writeOverrides(hdr, req)
}

// writeOverrides applies the response-* query parameters.
func writeOverrides(hdr http.Header, req *request) {
	for q, h := range responseOverrides {
		if v := req.query.Get(q); v != "" {
			hdr.Set(h, v)
		}
	}
}

func (s *Server) deleteObject(w http.ResponseWriter, req *request) error {
	res, err := s.data.Delete(req.Context(), req.dataTarget())
	if err != nil {
		return err
	}
	// S3 names the version a DELETE removed or the marker it wrote.
	id := res.VersionID
	if id == "" {
		id = req.version
	}
	writeVersionHeader(w.Header(), id)
	if res.DeleteMarker {
		w.Header().Set("x-amz-delete-marker", "true")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// copySource parses x-amz-copy-source ("/bucket/key" or "bucket/key",
// URL-encoded, optionally with ?versionId=). version is the version id
// named, hasVersion whether one was.
func copySource(h string) (bucket, key, version string, hasVersion bool, err error) {
	h, version, hasVersion = strings.Cut(h, "?versionId=")
	h = strings.TrimPrefix(h, "/")
	rawBucket, rawKey, ok := strings.Cut(h, "/")
	if !ok || rawKey == "" {
		return "", "", "", false, s3err.Newf(s3err.InvalidArgument, "Copy Source must mention the source bucket and key: sourcebucket/sourcekey")
	}
	if bucket, err = url.PathUnescape(rawBucket); err == nil {
		key, err = url.PathUnescape(rawKey)
	}
	if err == nil && hasVersion {
		version, err = url.QueryUnescape(version)
	}
	if err != nil {
		return "", "", "", false, s3err.Newf(s3err.InvalidArgument, "Invalid copy source encoding")
	}
	return bucket, key, version, hasVersion, validateKey(key)
}

type copyObjectResult struct {
	XMLName      struct{} `xml:"http://s3.amazonaws.com/doc/2006-03-01/ CopyObjectResult"`
	LastModified string   `xml:"LastModified"`
	ETag         string   `xml:"ETag"`
}

// copySourceOf reads a copy's source and its conditions.
func (s *Server) copySourceOf(req *request) (dataplane.CopySource, error) {
	bucket, key, version, hasVersion, err := copySource(req.Header.Get("x-amz-copy-source"))
	if err != nil {
		return dataplane.CopySource{}, err
	}
	if hasVersion {
		// Only the source's owner learns that the version is missing.
		if err := s.authorizeBucket(req.Context(), req.tenant, bucket, false); err != nil {
			return dataplane.CopySource{}, err
		}
		if err := s.checkVersion(version, bucket, key, "x-amz-copy-source"); err != nil {
			return dataplane.CopySource{}, err
		}
	}
	return dataplane.CopySource{
		Bucket: bucket, Key: key, VersionID: version, Conditions: conditions(req.Header, "x-amz-copy-source-"),
		Authorize: func(ctx context.Context, bucket string) error {
			return s.authorizeBucket(ctx, req.tenant, bucket, false)
		},
	}, nil
}

func (s *Server) copyObject(w http.ResponseWriter, req *request) error {
	src, err := s.copySourceOf(req)
	if err != nil {
		return err
	}
	directive := strings.ToUpper(req.Header.Get("x-amz-metadata-directive"))
	if directive != "" && directive != "COPY" && directive != "REPLACE" {
		return s3err.Newf(s3err.InvalidArgument, "Unknown metadata directive.")
	}
	var replace *storage.ObjectMeta
	if directive == "REPLACE" {
		m, err := metaFromHeaders(req.Header)
		if err != nil {
			return err
		}
		replace = &m
	} else if src.Bucket == req.target.bucket && src.Key == req.target.key && src.VersionID == "" {
		return s3err.Newf(s3err.InvalidRequest, "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.")
	}
	info, err := s.data.Copy(req.Context(), dataplane.CopyRequest{Target: req.dataTarget(), Source: src, Replace: replace})
	if err != nil {
		return err
	}
	writeVersionHeader(w.Header(), info.VersionID)
	if src.VersionID != "" {
		w.Header().Set("x-amz-copy-source-version-id", src.VersionID)
	}
	return writeXML(w, http.StatusOK, copyObjectResult{LastModified: isoTime(info.LastModified), ETag: quoteETag(info.Meta.ETag)})
}

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
