package s3api

import (
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/facet-sds/facet/internal/s3err"
)

// admit runs QoS admission and installs the request's shaping.
func (s *Server) admit(w http.ResponseWriter, req *request) error {
	if s.qos == nil {
		return nil
	}
	sh, err := s.qos.Admit(req.Context(), req.tenant, req.Method)
	if err != nil {
		var ra interface{ RetryAfter() time.Duration }
		if errors.As(err, &ra) {
			secs := int(math.Ceil(ra.RetryAfter().Seconds()))
			w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
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
