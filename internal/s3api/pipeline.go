package s3api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/facet-sds/facet/internal/dataplane"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
)

// Pipelines resolves the filters that apply to a request. It answers from
// memory: there is no metadata-store round trip on the request path.
type Pipelines interface {
	ForPut(req *filter.Request) dataplane.Pipeline
}

// filterRequest describes req to filters and to the policy table. The
// object's content type and user metadata come from obj, what the object
// is or will be: an upload part or a copy does not carry them in its own
// headers. x-facet-* headers are the request's own.
func (req *request) filterRequest(method filter.Method, size int64, obj storage.ObjectMeta) *filter.Request {
	h := map[string]string{}
	for k, v := range req.Header {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-facet-") {
			h[lk] = strings.Join(v, ",")
		}
	}
	if obj.ContentType != "" {
		h["content-type"] = obj.ContentType
	}
	for k, v := range obj.UserMeta {
		h["x-amz-meta-"+k] = v
	}
	return &filter.Request{Tenant: req.tenant, Bucket: req.target.bucket, Key: req.target.key, Method: method, Size: size, Header: h}
}

// encodeForStorage runs the PUT pipeline over body, which is (a part of)
// an object described by obj. The returned seal
// records the reverse plan into the object's system metadata; it must run
// after the returned stream reached io.EOF.
func (s *Server) encodeForStorage(req *request, size int64, obj storage.ObjectMeta, body io.Reader) (io.Reader, func(m *storage.ObjectMeta) error, error) {
	if s.pipelines == nil {
		return body, func(*storage.ObjectMeta) error { return nil }, nil
	}
	freq := req.filterRequest(filter.MethodPut, size, obj)
	pipe := s.pipelines.ForPut(freq)
	if pipe.Empty() {
		return body, func(*storage.ObjectMeta) error { return nil }, nil
	}
	out, planOf, err := pipe.Put(writeContext(req), freq, body)
	if err != nil {
		return nil, nil, s3err.Wrap(s3err.InternalError, err)
	}
	return out, func(m *storage.ObjectMeta) error {
		plan, err := planOf()
		if err != nil {
			return err
		}
		if l := plan.Logical; l != nil && (l.Size != m.Size || l.MD5 != m.ETag) {
			// A transformer rewrote the body: the object is its output,
			// and the client's checksums no longer describe it.
			m.Size, m.ETag, m.Checksums, m.ChecksumType = l.Size, l.MD5, nil, ""
		}
		if plan.Empty() {
			return nil
		}
		enc, err := plan.Encode()
		if err != nil {
			return err
		}
		if m.System == nil {
			m.System = map[string]string{}
		}
		m.System[dataplane.PlanKey] = enc
		return nil
	}, nil
}

// openLogical opens bytes [off, off+n) of what the client wrote, undoing
// the object's recorded filters when it has any.
func (s *Server) openLogical(ctx context.Context, req *request, info storage.ObjectInfo, rng *storage.Range) (io.ReadCloser, error) {
	return s.openLogicalFrom(ctx, req, s.backend, info, rng)
}

// openLogicalFrom is openLogical reading the stored bytes from b.
func (s *Server) openLogicalFrom(ctx context.Context, req *request, b storage.Backend, info storage.ObjectInfo, rng *storage.Range) (io.ReadCloser, error) {
	if !dataplane.Transformed(info.Meta) {
		rc, got, err := b.GetObject(ctx, info.Bucket, info.Key, rng)
		if err != nil {
			return nil, err
		}
		if got.Meta.ETag != info.Meta.ETag || !got.LastModified.Equal(info.LastModified) {
			rc.Close()
			return nil, dataplane.ErrChanged
		}
		return rc, nil
	}
	src, err := s.decoders.Logical(ctx, req.filterRequest(filter.MethodGet, info.Meta.Size, info.Meta), b, info)
	if err != nil {
		return nil, err
	}
	off, n := int64(0), src.Size()
	if rng != nil {
		off, n = rng.Start, rng.Length
	}
	return src.Open(ctx, off, n)
}

// decodeErr maps a failure to read an object back.
func decodeErr(err error, bucket, key string) error {
	if errors.Is(err, filter.ErrIntegrity) {
		return &s3err.Error{Code: s3err.InternalError, Bucket: bucket, Key: key,
			Message: "The stored object failed its integrity check and cannot be returned.", Err: err}
	}
	return storageErr(fmt.Errorf("read back: %w", err), bucket, key)
}
