// Package s3api owns Facet's S3 front end: an http.Handler that parses the
// path itself (keys may hold "//" and ".."), authenticates every request
// with SigV4, enforces tenant ownership of buckets, and maps each S3
// operation onto one entry point of the data plane (internal/dataplane:
// object reads and writes, with their filters, cache and select) or, for
// buckets, listings and uploads, onto the storage backend. It writes the
// answer: headers, XML, the event stream. Errors are *s3err.Error values,
// rendered in one place.
package s3api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/facet-sds/facet/internal/admit"
	"github.com/facet-sds/facet/internal/dataplane"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/flowctx"
	"github.com/facet-sds/facet/internal/obs"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
)

// RequestBody is an authenticated request body: it yields the decoded
// payload and verifies it (payload hash, chunk signatures) as it is read,
// returning an error instead of io.EOF when verification fails.
type RequestBody interface {
	io.Reader
	// DecodedLength is the payload length the client declared, or -1.
	DecodedLength() int64
	// Trailer holds trailing headers (x-amz-checksum-*) once the body has
	// been read to the end.
	Trailer() http.Header
}

// Authenticator verifies a request's signature and names its tenant. Its
// errors are *s3err.Error values.
type Authenticator interface {
	Authenticate(r *http.Request) (tenant, accessKey string, body RequestBody, err error)
}

// Config assembles a Server.
type Config struct {
	Backend storage.Backend
	Buckets Buckets
	Auth    Authenticator
	Logger  *slog.Logger
	// Domains are base domains for virtual-host style requests
	// ("<bucket>.<domain>").
	Domains []string
	// Region is reported by GetBucketLocation.
	Region string
	// MaxObjectSize bounds a single PutObject (S3: 5 GiB).
	MaxObjectSize int64
	// Data moves objects' bytes: every object read and write goes
	// through it. nil is a data plane over Backend without filters.
	Data *dataplane.Plane
	// Observer is told about every request; nil observes nothing.
	Observer obs.Observer
	// QoS admits requests and shapes their bytes (qos.go); nil admits all.
	QoS admit.QoS
}

// Server is the S3 API. Each S3 operation is a method on it.
type Server struct {
	backend storage.Backend
	buckets Buckets
	auth    Authenticator
	log     *slog.Logger
	domains []string
	region  string
	maxPut  int64
	now     func() time.Time

	data     *dataplane.Plane
	observer obs.Observer
	qos      admit.QoS
	// ready: young buckets seen in the backend (bucketready.go).
	ready readyBuckets
}

// New returns a Server.
func New(cfg Config) *Server {
	s := &Server{
		backend: cfg.Backend, buckets: cfg.Buckets, auth: cfg.Auth, log: cfg.Logger,
		domains: cfg.Domains, region: cfg.Region, maxPut: cfg.MaxObjectSize, now: time.Now,
		data: cfg.Data, observer: cfg.Observer, qos: cfg.QoS,
	}
	if s.data == nil {
		s.data = dataplane.New(dataplane.Config{Backend: cfg.Backend, Logger: cfg.Logger})
	}
	if s.observer == nil {
		s.observer = noObserver{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.region == "" {
		s.region = "us-east-1"
	}
	if s.maxPut <= 0 {
		s.maxPut = 5 << 30
	}
	return s
}

// request carries what every operation handler needs.
type request struct {
	*http.Request
	id        string
	tenant    string
	accessKey string
	target    target
	query     url.Values
	// version is the version id the request names (versionId), "" none.
	version  string
	body     RequestBody
	op       operation
	cleanups []func()
	obs      obs.Observation
}

// onDone registers f to run when the handler has returned.
func (r *request) onDone(f func()) { r.cleanups = append(r.cleanups, f) }

// statusWriter records the status and bytes written, for the access log.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// ReadFrom keeps net/http's sendfile path reachable through the wrapper:
// a whole-object GET from the filesystem backend then never copies the
// bytes through user space.
func (w *statusWriter) ReadFrom(r io.Reader) (int64, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	var n int64
	var err error
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(r)
	} else {
		n, err = io.Copy(struct{ io.Writer }{w.ResponseWriter}, r)
	}
	w.bytes += n
	return n, err
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ServeHTTP authenticates, routes and runs one S3 request.
func (s *Server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	start := time.Now()
	w := &statusWriter{ResponseWriter: rw}
	req := &request{Request: r, id: newRequestID()}
	req.obs = obs.Observation{Method: r.Method, Start: start, RequestID: req.id, Remote: r.RemoteAddr}
	w.Header().Set("x-amz-request-id", req.id)
	w.Header().Set("x-amz-id-2", req.id)
	w.Header().Set("Server", "Facet")
	// Deferred so that observers hear of a request even when its handler
	// aborts the connection with a panic (http.ErrAbortHandler).
	defer func() {
		o := &req.obs
		o.Op, o.Tenant, o.Bucket, o.Key = string(req.op), req.tenant, req.target.bucket, req.target.key
		o.AccessKey = req.accessKey
		if o.AccessKey == "" {
			o.AccessKey = claimedAccessKey(r)
		}
		o.Status, o.BytesOut, o.Duration = w.status, w.bytes, time.Since(start)
		if o.Status == 0 {
			o.Status = http.StatusOK
		}
		s.observer.Done(o)
	}()
	err := s.serve(w, req)
	for _, f := range req.cleanups {
		f()
	}
	if err != nil {
		e := s3err.As(err)
		req.obs.ErrCode = e.Code.Name
		if e.Bucket == "" && e.Code.Status != http.StatusNotModified {
			e.Bucket, e.Key = req.target.bucket, req.target.key
		}
		if e.Resource == "" {
			e.Resource = r.URL.EscapedPath()
		}
		if w.status == 0 {
			s3err.Write(w, r, e, req.id)
		}
		s.logError(r, req, e, w.status)
	}
	s.log.LogAttrs(r.Context(), slog.LevelDebug, "s3 request", slog.String("request_id", req.id),
		slog.String("op", string(req.op)), slog.String("method", r.Method),
		slog.String("bucket", req.target.bucket), slog.String("tenant", req.tenant),
		slog.Int("status", w.status), slog.Int64("bytes_out", w.bytes),
		slog.Duration("duration", time.Since(start)))
}

// logError logs a request's error at the level its class calls for:
// server errors at ERROR, client errors at INFO, and the answers clients
// probe for (HEAD of what does not exist: rclone and aws s3 sync ask per
// file) at DEBUG, as is a 304.
func (s *Server) logError(r *http.Request, req *request, e *s3err.Error, status int) {
	if status == 0 {
		status = e.Code.Status
	}
	lvl := slog.LevelInfo
	switch obs.ClassOf(status, e.Code.Name) {
	case obs.ClassServer:
		lvl = slog.LevelError
	case obs.ClassOK:
		lvl = slog.LevelDebug
	case obs.ClassClient:
		if r.Method == http.MethodHead && status == http.StatusNotFound {
			lvl = slog.LevelDebug
		}
	}
	ctx := r.Context()
	if !s.log.Enabled(ctx, lvl) {
		return
	}
	op := req.op
	if op == "" {
		op = "-" // refused before it was routed, as the metrics say
	}
	attrs := []slog.Attr{slog.String("request_id", req.id),
		slog.String("op", string(op)), slog.String("tenant", req.tenant),
		slog.String("code", e.Code.Name), slog.Int("status", status)}
	if e.Message != "" {
		attrs = append(attrs, slog.String("message", e.Message))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.String("err", e.Err.Error()))
	}
	s.log.LogAttrs(ctx, lvl, "s3 error", attrs...)
}

func (s *Server) serve(w http.ResponseWriter, req *request) error {
	// A malformed x-facet-context is refused before anything else, even
	// authentication: it changes nothing.
	fc, present, err := flowctx.FromHeader(req.Header)
	if err != nil {
		return &s3err.Error{Code: s3err.InvalidArgument, Message: err.Error(), Err: err}
	}
	t, err := parseTarget(req.Host, req.URL.EscapedPath(), s.domains)
	if err != nil {
		return s3err.Newf(s3err.InvalidURI, "Couldn't parse the specified URI.")
	}
	req.target = t
	q, err := url.ParseQuery(req.URL.RawQuery)
	if err != nil {
		return s3err.Newf(s3err.InvalidArgument, "malformed query string")
	}
	req.query = q
	req.op = resolveOperation(req.Request, t, q)
	// What request classification reads (flowctx, at admission), from
	// this one parse of the request.
	h := req.Header
	// The request's share of node-wide filter budgets (filter.Scope).
	req.Request = req.WithContext(flowctx.With(filter.WithScope(req.Context()), &flowctx.Request{
		Context: fc, Present: present, BucketKey: t.classKey(), UserAgent: req.UserAgent(),
		Meta: func(name string) string { return h.Get("X-Amz-Meta-" + name) },
	}))

	tenant, accessKey, body, err := s.auth.Authenticate(req.Request)
	if err != nil {
		return err
	}
	req.tenant, req.accessKey, req.body = tenant, accessKey, body

	if !req.op.implemented() {
		if req.op == opUnknown {
			return s3err.Newf(s3err.NotImplemented, "%s on this resource is no S3 operation Facet implements", req.Method)
		}
		return s3err.Newf(s3err.NotImplemented, "%s is not implemented", req.op)
	}
	if t.hasKey {
		if err := validateKey(t.key); err != nil {
			return err
		}
	}
	req.obs.Op, req.obs.Tenant, req.obs.Bucket, req.obs.Key = string(req.op), req.tenant, t.bucket, t.key
	req.obs.Routed = true
	s.observer.Started(&req.obs)
	if err := s.admit(w, req); err != nil {
		return err
	}
	ctx := req.Context()
	if t.bucket != "" && req.op != opCreateBucket {
		if err := s.authorizeBucket(ctx, req.tenant, t.bucket, req.op == opHeadBucket); err != nil {
			return err
		}
	}
	version, err := s.requestVersion(req)
	if err != nil {
		return err
	}
	req.version = version
	switch req.op {
	case opListBuckets:
		return s.listBuckets(w, req)
	case opCreateBucket:
		return s.createBucket(w, req)
	case opDeleteBucket:
		return s.deleteBucket(w, req)
	case opHeadBucket:
		return s.headBucket(w, req)
	case opGetBucketLocation:
		return s.getBucketLocation(w, req)
	case opGetBucketVersioning:
		return s.getBucketVersioning(w, req)
	case opPutBucketVersioning:
		return s.putBucketVersioning(w, req)
	case opGetBucketACL, opGetObjectACL:
		return s.getACL(w, req)
	case opListObjectsV1:
		return s.listObjectsV1(w, req)
	case opListObjectsV2:
		return s.listObjectsV2(w, req)
	case opListObjectVersions:
		return s.listObjectVersions(w, req)
	case opListMultipartUploads:
		return s.listMultipartUploads(w, req)
	case opDeleteObjects:
		return s.deleteObjects(w, req)
	case opPutObject:
		return s.putObject(w, req)
	case opCopyObject:
		return s.copyObject(w, req)
	case opGetObject:
		return s.getObject(w, req, true)
	case opHeadObject:
		return s.getObject(w, req, false)
	case opDeleteObject:
		return s.deleteObject(w, req)
	case opCreateMultipartUpload:
		return s.createMultipartUpload(w, req)
	case opUploadPart:
		return s.uploadPart(w, req)
	case opUploadPartCopy:
		return s.uploadPartCopy(w, req)
	case opCompleteMultipartUpload:
		return s.completeMultipartUpload(w, req)
	case opAbortMultipartUpload:
		return s.abortMultipartUpload(w, req)
	case opListParts:
		return s.listParts(w, req)
	case opSelectObjectContent:
		return s.selectObjectContent(w, req)
	}
	return s3err.New(s3err.NotImplemented)
}

// authorizeBucket checks that bucket exists and belongs to tenant. Another
// tenant's bucket answers AccessDenied, as S3 does. A bucket just claimed
// is waited for until the backend has it (bucketready.go); head asks the
// backend whatever the bucket's age.
func (s *Server) authorizeBucket(ctx context.Context, tenant, bucket string, head bool) error {
	owner, created, err := s.buckets.BucketOwner(ctx, bucket)
	if err != nil {
		if errors.Is(err, s3err.ErrNoSuchBucket) {
			return &s3err.Error{Code: s3err.NoSuchBucket, Bucket: bucket}
		}
		return s3err.Wrap(s3err.InternalError, err)
	}
	if owner != tenant {
		return &s3err.Error{Code: s3err.AccessDenied, Bucket: bucket}
	}
	return s.bucketReady(ctx, bucket, created, head)
}
