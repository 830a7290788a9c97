package s3api

import (
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/facet-sds/facet/internal/admit"
	"github.com/facet-sds/facet/internal/s3err"
)

// invocationID is the header in which AWS SDKs name one call across its
// retries.
const invocationID = "Amz-Sdk-Invocation-Id"

// sdkRequest is the header in which AWS SDKs say which attempt of how
// many a request is: "attempt=1; max=3".
const sdkRequest = "Amz-Sdk-Request"

// willRetry reports whether an SDK says it may retry this request: not
// when it is its last attempt (a place in line kept for a retry that
// never comes would hold a token for nothing). An SDK that does not say
// is taken to retry.
func willRetry(h string) bool {
	attempt, most := 0, 0
	for part := range strings.SplitSeq(h, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(v)
		if err != nil {
			continue
		}
		switch k {
		case "attempt":
			attempt = n
		case "max":
			most = n
		}
	}
	return most == 0 || attempt < most
}

// admit runs QoS admission and installs the request's shaping.
func (s *Server) admit(w http.ResponseWriter, req *request) error {
	if s.qos == nil {
		return nil
	}
	ctx := req.Context()
	if id := req.Header.Get(invocationID); id != "" && len(id) <= 64 && willRetry(req.Header.Get(sdkRequest)) {
		// The SDK's id of this call, the same on its retries: a call
		// refused with SlowDown keeps its place in line for its retry.
		ctx = admit.WithRetryKey(ctx, id)
	}
	sh, err := s.qos.Admit(ctx, req.tenant, req.Method)
	if err != nil {
		var ra interface{ RetryAfter() time.Duration }
		if errors.As(err, &ra) {
			d := ra.RetryAfter()
			secs := int(math.Ceil(d.Seconds()))
			w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
			// Milliseconds, which AWS SDKs (boto3's standard mode) wait
			// before their retry; Retry-After's whole seconds would bunch
			// the retries up.
			w.Header().Set("X-Amz-Retry-After", strconv.FormatInt(max(int64(math.Ceil(float64(d)/float64(time.Millisecond))), 1), 10))
			return &s3err.Error{Code: s3err.SlowDown, Bucket: req.target.bucket, Key: req.target.key, Err: err}
		}
		return s3err.Wrap(s3err.InternalError, err)
	}
	req.onDone(sh.Done)
	if req.body != nil && req.ContentLength != 0 {
		// A request without a payload (most GETs) has nothing to pace.
		req.body = shapedBody{RequestBody: req.body, r: sh.Reader(req.body)}
	}
	if sw, ok := w.(*statusWriter); ok {
		sw.ResponseWriter = &shapedResponse{ResponseWriter: sw.ResponseWriter, w: sh.Writer(sw.ResponseWriter)}
	}
	return nil
}

// shapedBody reads the payload through the shaper, keeping the body's
// other methods.
type shapedBody struct {
	RequestBody
	r io.Reader
}

func (b shapedBody) Read(p []byte) (int, error) { return b.r.Read(p) }

// shapedResponse writes the response through the shaper.
type shapedResponse struct {
	http.ResponseWriter
	w io.Writer
}

func (r *shapedResponse) Write(p []byte) (int, error) { return r.w.Write(p) }

// ReadFrom passes the shaper's fast path on (sendfile while the flow is
// unlimited).
func (r *shapedResponse) ReadFrom(src io.Reader) (int64, error) {
	if rf, ok := r.w.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	return io.Copy(struct{ io.Writer }{r.w}, src)
}

func (r *shapedResponse) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
