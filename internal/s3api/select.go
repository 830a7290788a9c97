package s3api

import (
	"errors"
	"net/http"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/s3select"
)

const opSelectObjectContent operation = "SelectObjectContent"

// selectEngine is the S3 Select engine requests run on.
func (s *Server) selectEngine() s3select.Engine { return s3select.Native{} }

// selectErr renders an S3 Select error that happened before the response
// started: HTTP 400 with S3 Select's code.
func selectErr(err error) error {
	e := s3select.AsError(err)
	status := http.StatusBadRequest
	if e.Code == s3select.CodeInternalError {
		status = http.StatusInternalServerError
	}
	return &s3err.Error{Code: s3err.Code{Name: e.Code, Status: status, Message: e.Message}, Err: e.Err}
}

// selectObjectContent runs SelectObjectContent at the storage stage: over
// the object's logical stream, after its recorded filters are undone, so
// compressed and encrypted objects are queried as the client wrote them
// and only the selected bytes leave the server.
func (s *Server) selectObjectContent(w http.ResponseWriter, req *request) error {
	ctx := req.Context()
	bucket, key := req.target.bucket, req.target.key
	sreq, err := s3select.ParseRequest(req.body)
	if err != nil {
		var se *s3select.Error
		if !errors.As(err, &se) {
			return s3err.Wrap(s3err.IncompleteBody, err)
		}
		return selectErr(err)
	}
	prepared, err := s.selectEngine().Prepare(sreq)
	if err != nil {
		return selectErr(err)
	}
	info, err := s.backend.HeadObject(ctx, bucket, key)
	if err != nil {
		return storageErr(err, bucket, key)
	}
	if err := evalConditions(req.Header, info, ""); err != nil {
		return err
	}
	if err := s.bypassesTransforms(req, info, "SelectObjectContent"); err != nil {
		return err
	}
	src, err := s.decoders.Logical(ctx, req.filterRequest(filter.MethodGet, info.Meta.Size, info.Meta), s.backend, info)
	if err != nil {
		return decodeErr(err, bucket, key)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	ew := s3select.NewEventWriter(w)
	sink := &flushingSink{ew: ew, w: w}
	stats, err := prepared.Run(ctx, src, sink)
	if err != nil {
		// The status line is sent: the error travels as an event.
		e := s3select.AsError(err)
		if e.Code == s3select.CodeInternalError {
			s.log.ErrorContext(ctx, "select failed", "request_id", req.id, "bucket", bucket, "err", e.Err)
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
