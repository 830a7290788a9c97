package dataplane

import (
	"context"
	"net/http"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/s3select"
)

// SelectRequest is a query over one object (S3's SelectObjectContent).
type SelectRequest struct {
	Target
	Conditions Conditions
	Query      *s3select.Request
}

// Selection is a query ready to run over an object's logical stream.
type Selection struct {
	prepared s3select.Prepared
	src      filter.Source
}

// Run streams the query's result to sink. Its errors come after the
// answer started: a front end sends them in the stream.
func (s *Selection) Run(ctx context.Context, sink s3select.Sink) (s3select.Stats, error) {
	return s.prepared.Run(ctx, s.src, sink)
}

// selectEngine is the S3 Select engine queries run on.
func (p *Plane) selectEngine() s3select.Engine { return s3select.Native{} }

// Select prepares a query at the storage stage: over the object's logical
// stream, after its recorded filters are undone, so compressed and
// encrypted objects are queried as the client wrote them and only the
// selected bytes leave the server.
func (p *Plane) Select(ctx context.Context, req SelectRequest) (*Selection, error) {
	bucket, key := req.Bucket, req.Key
	ctx = pinVersion(ctx, bucket, key, req.VersionID)
	prepared, err := p.selectEngine().Prepare(req.Query)
	if err != nil {
		return nil, SelectError(err)
	}
	info, err := p.backend.HeadObject(ctx, bucket, key)
	if err != nil {
		return nil, S3Error(err, bucket, key)
	}
	if err := req.Conditions.eval(info, false); err != nil {
		return nil, err
	}
	if err := p.bypassesTransforms(req.Target, info, "SelectObjectContent"); err != nil {
		return nil, err
	}
	src, err := p.decoders.Logical(ctx, req.filterRequest(filter.MethodGet, info.Meta.Size, info.Meta), p.backend, info)
	if err != nil {
		return nil, decodeErr(err, bucket, key)
	}
	return &Selection{prepared: prepared, src: src}, nil
}

// SelectError renders an S3 Select error that happened before the answer
// started: 400 with S3 Select's code.
func SelectError(err error) error {
	e := s3select.AsError(err)
	status := http.StatusBadRequest
	if e.Code == s3select.CodeInternalError {
		status = http.StatusInternalServerError
	}
	return &s3err.Error{Code: s3err.Code{Name: e.Code, Status: status, Message: e.Message}, Err: e.Err}
}
