package s3api

import (
	"errors"
	"net/http"

	"github.com/facet-sds/facet/internal/dataplane"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/s3select"
)

const opSelectObjectContent operation = "SelectObjectContent"

// selectErr renders an S3 Select error that happened before the response
// started: HTTP 400 with S3 Select's code.
func selectErr(err error) error { return dataplane.SelectError(err) }

// selectObjectContent runs SelectObjectContent: the data plane runs the
// query (dataplane.Plane.Select); its records, progress and end travel
// in S3's event stream.
func (s *Server) selectObjectContent(w http.ResponseWriter, req *request) error {
	ctx := req.Context()
	sreq, err := s3select.ParseRequest(req.body)
	if err != nil {
		var se *s3select.Error
		if !errors.As(err, &se) {
			return s3err.Wrap(s3err.IncompleteBody, err)
		}
		return selectErr(err)
	}
	sel, err := s.data.Select(ctx, dataplane.SelectRequest{Target: req.dataTarget(), Conditions: conditions(req.Header, ""), Query: sreq})
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	ew := s3select.NewEventWriter(w)
	sink := &flushingSink{ew: ew, w: w}
	stats, err := sel.Run(ctx, sink)
	if err != nil {
		// The status line is sent: the error travels as an event.
		e := s3select.AsError(err)
		if e.Code == s3select.CodeInternalError {
			s.log.ErrorContext(ctx, "select failed", "request_id", req.id, "bucket", req.target.bucket, "err", e.Err)
		}
		req.obs.ErrCode = e.Code
		_ = ew.Error(e.Code, e.Message)
		sink.flush()
		return nil
	}
	if err := ew.Stats(stats); err == nil {
		_ = ew.End()
	}
	sink.flush()
	return nil
}

// flushingSink sends each event to the client as soon as it is framed.
type flushingSink struct {
	ew *s3select.EventWriter
	w  http.ResponseWriter
}

func (f *flushingSink) flush() {
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
}

func (f *flushingSink) Records(p []byte) error {
	err := f.ew.Records(p)
	f.flush()
	return err
}

func (f *flushingSink) Progress(st s3select.Stats) error {
	err := f.ew.Progress(st)
	f.flush()
	return err
}

func (f *flushingSink) Cont() error {
	err := f.ew.Cont()
	f.flush()
	return err
}
