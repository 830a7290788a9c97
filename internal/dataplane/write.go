package dataplane

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/filter/cache"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
)

// Writes: a PUT's request filters (the metadata guard and tagging edit its
// metadata, a caching policy admits its body), then its PUT pipeline over
// the body, whose reverse plan is recorded in the object's system
// metadata when the body has ended.

// Payload is a client's body on its way to storage, as a front end
// verifies it.
type Payload struct {
	Body io.Reader
	// Seal completes the object's size, ETag and checksums once Body has
	// ended, and fails when the body was not what the client declared.
	Seal func(m *storage.ObjectMeta) error
}

// PutRequest is a write of a whole object.
type PutRequest struct {
	Target
	// Meta is the object's metadata as the client set it.
	Meta storage.ObjectMeta
	// Size is the body's declared length, -1 when it is not known.
	Size int64
	// IfMatch and IfNoneMatch make the write conditional: "*" or ETags.
	IfMatch, IfNoneMatch string
	// Payload opens the client's body, once the request filters let the
	// write go ahead.
	Payload func() (Payload, error)
}

// Put writes an object.
func (p *Plane) Put(ctx context.Context, req PutRequest) (storage.ObjectInfo, error) {
	if err := p.checkPutPreconditions(ctx, req); err != nil {
		return storage.ObjectInfo{}, err
	}
	meta := req.Meta
	hooks, err := p.prepareMeta(ctx, req.Target, &meta, req.Size, true)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	defer hooks.abort()
	pl, err := req.Payload()
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	body, sealPlan, err := p.encodeForStorage(ctx, req.Target, req.Size, meta, hooks.tap(pl.Body))
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	info, err := p.backend.PutObject(writeContext(ctx), req.Bucket, req.Key, storage.PutInput{
		Body:     body,
		Meta:     meta,
		Declared: max(req.Size, 0),
		Seal: func(m *storage.ObjectMeta) error {
			if err := pl.Seal(m); err != nil {
				return err
			}
			if err := sealPlan(m); err != nil {
				return err
			}
			return hooks.seal(ctx, req.Target, m)
		},
	})
	p.changed(req.Bucket, req.Key)
	if err != nil {
		return storage.ObjectInfo{}, S3Error(err, req.Bucket, req.Key)
	}
	hooks.committed(info)
	return info, nil
}

// checkPutPreconditions implements conditional writes: If-None-Match: *
// refuses to overwrite, If-Match requires the current ETag.
func (p *Plane) checkPutPreconditions(ctx context.Context, req PutRequest) error {
	inm, im := req.IfNoneMatch, req.IfMatch
	if inm == "" && im == "" {
		return nil
	}
	info, err := p.backend.HeadObject(ctx, req.Bucket, req.Key)
	exists := err == nil
	if err != nil && !errors.Is(err, storage.ErrObjectNotFound) {
		return S3Error(err, req.Bucket, req.Key)
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

// PartRequest is a write of one part of a multipart upload.
type PartRequest struct {
	Target
	UploadID string
	Number   int
	// Upload is the upload's metadata: the part goes through the PUT
	// pipeline of the object the upload makes.
	Upload storage.ObjectMeta
	// Size is the body's declared length.
	Size int64
	Body Payload
}

// PutPart writes a part of a multipart upload.
func (p *Plane) PutPart(ctx context.Context, req PartRequest) (storage.Part, error) {
	pl := req.Body
	body, sealPlan, err := p.encodeForStorage(ctx, req.Target, req.Size, req.Upload, pl.Body)
	if err != nil {
		return storage.Part{}, err
	}
	part, err := p.backend.PutPart(writeContext(ctx), req.Bucket, req.Key, req.UploadID, req.Number, storage.PutInput{
		Body:     body,
		Declared: max(req.Size, 0),
		Seal: func(m *storage.ObjectMeta) error {
			if err := pl.Seal(m); err != nil {
				return err
			}
			return sealPlan(m)
		},
	})
	if err != nil {
		return storage.Part{}, S3Error(err, req.Bucket, req.Key)
	}
	return part, nil
}

// CompleteRequest completes a multipart upload.
type CompleteRequest struct {
	Target
	UploadID string
	// Parts are the parts the client listed; Chosen the stored parts they
	// name, in order.
	Parts  []storage.CompletePart
	Chosen []storage.Part
	// Meta is the object's metadata, its size, ETag and checksums
	// derived from the parts'.
	Meta storage.ObjectMeta
}

// Complete makes a multipart upload's parts an object. Each part went
// through filters on its own, so the object is undone part by part: the
// parts' reverse plans are recorded in its metadata.
func (p *Plane) Complete(ctx context.Context, req CompleteRequest) (storage.ObjectInfo, error) {
	meta := req.Meta
	meta.System = withoutPlans(meta.System)
	if err := recordPartPlans(&meta, req.Chosen); err != nil {
		return storage.ObjectInfo{}, s3err.Wrap(s3err.InternalError, err)
	}
	if len(meta.System) == 0 {
		meta.System = nil
	}
	info, err := p.backend.CompleteUpload(writeContext(ctx), req.Bucket, req.Key, req.UploadID, req.Parts, meta)
	p.changed(req.Bucket, req.Key)
	if err != nil {
		return storage.ObjectInfo{}, S3Error(err, req.Bucket, req.Key)
	}
	return info, nil
}

// recordPartPlans keeps each part's reverse plan.
func recordPartPlans(meta *storage.ObjectMeta, parts []storage.Part) error {
	plans := make([]PartPlan, len(parts))
	for i, p := range parts {
		plan, err := PlanOf(p.System)
		if err != nil {
			return fmt.Errorf("part %d: %w", p.Number, err)
		}
		plans[i] = PartPlan{Size: p.Size, Stored: p.StoredSize, Plan: plan}
	}
	enc, err := EncodeParts(plans)
	if err != nil || enc == "" {
		return err
	}
	if meta.System == nil {
		meta.System = map[string]string{}
	}
	meta.System[PartsKey] = enc
	return nil
}

// EditMeta runs the metadata editors in force for a write that carries no
// body (CreateMultipartUpload, a copy replacing metadata): they may refuse
// it or change meta.
func (p *Plane) EditMeta(ctx context.Context, t Target, meta *storage.ObjectMeta) error {
	_, err := p.prepareMeta(ctx, t, meta, -1, false)
	return err
}

// encodeForStorage runs the PUT pipeline over body, which is (a part of)
// an object described by obj. The returned seal records the reverse plan
// into the object's system metadata; it must run after the returned
// stream reached io.EOF.
func (p *Plane) encodeForStorage(ctx context.Context, t Target, size int64, obj storage.ObjectMeta, body io.Reader) (io.Reader, func(m *storage.ObjectMeta) error, error) {
	if p.pipelines == nil {
		return body, func(*storage.ObjectMeta) error { return nil }, nil
	}
	freq := t.filterRequest(filter.MethodPut, size, obj)
	pipe := p.pipelines.ForPut(freq)
	if pipe.Empty() {
		return body, func(*storage.ObjectMeta) error { return nil }, nil
	}
	out, planOf, err := pipe.Put(writeContext(ctx), freq, body)
	if err != nil {
		// A filter that could not start: the node's filter budget
		// (SlowDown) or the filter itself.
		return nil, nil, S3Error(err, t.Bucket, t.Key)
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
		m.System[PlanKey] = enc
		return nil
	}, nil
}

// putHooks are what a PUT's request filters add to its body and seal.
type putHooks struct {
	peekers []filter.MetaEditor // run at seal with the body's first bytes
	peekN   int
	head    []byte
	fill    *cache.Fill
	handed  bool // the fill went to its committing goroutine
	p       *Plane
}

// prepareMeta runs the write's metadata editors that need no content
// (refusing the request before its body is read, changing nothing), and
// returns the hooks the body and seal need, or nil. withBody is false for
// requests that carry no object body (CreateMultipartUpload, a copy).
func (p *Plane) prepareMeta(ctx context.Context, t Target, meta *storage.ObjectMeta, size int64, withBody bool) (*putHooks, error) {
	steps := p.requestSteps(t, filter.MethodPut, size, *meta)
	if len(steps) == 0 {
		return nil, nil
	}
	h := &putHooks{p: p}
	freq := t.filterRequest(filter.MethodPut, size, *meta)
	for _, st := range steps {
		switch f := st.Filter.(type) {
		case filter.MetaEditor:
			if f.Peek() > 0 {
				if withBody {
					h.peekers = append(h.peekers, f)
					h.peekN = max(h.peekN, f.Peek())
				}
				continue
			}
			if err := editMeta(ctx, f, freq, nil, meta); err != nil {
				h.abort()
				return nil, err
			}
		case cacher:
			if set := f.CacheSettings(); withBody && set.AdmitPut && p.cache != nil {
				h.fill = p.cache.Admit(policyOf(set), t.Bucket, t.Key, size)
			}
		}
	}
	if len(h.peekers) == 0 && h.fill == nil {
		return nil, nil
	}
	return h, nil
}

func editMeta(ctx context.Context, f filter.MetaEditor, freq *filter.Request, head []byte, meta *storage.ObjectMeta) error {
	um := meta.UserMeta
	if um == nil {
		um = map[string]string{}
	}
	if err := f.EditMeta(ctx, freq, head, um); err != nil {
		var r *filter.Refusal
		if errors.As(err, &r) {
			return s3err.Newf(s3err.InvalidArgument, "%s", r.Message)
		}
		return s3err.Wrap(s3err.InternalError, err)
	}
	if len(um) == 0 {
		um = nil
	}
	meta.UserMeta = um
	return nil
}

// abort drops the cache fill unless the write committed it.
func (h *putHooks) abort() {
	if h != nil && h.fill != nil && !h.handed {
		h.handed = true
		h.fill.Abort()
	}
}

// tap wraps the client's plain body: it keeps the first bytes the
// content editors want and copies the body into the cache fill.
func (h *putHooks) tap(r io.Reader) io.Reader {
	if h == nil {
		return r
	}
	return &putTap{r: r, h: h}
}

type putTap struct {
	r io.Reader
	h *putHooks
}

func (t *putTap) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		h := t.h
		if len(h.head) < h.peekN {
			h.head = append(h.head, p[:min(n, h.peekN-len(h.head))]...)
		}
		if h.fill != nil {
			h.fill.Write(p[:n])
		}
	}
	return n, err
}

// seal runs the content editors once the body has ended, before the
// object becomes visible.
func (h *putHooks) seal(ctx context.Context, t Target, m *storage.ObjectMeta) error {
	if h == nil {
		return nil
	}
	freq := t.filterRequest(filter.MethodPut, m.Size, *m)
	for _, f := range h.peekers {
		if err := editMeta(ctx, f, freq, h.head, m); err != nil {
			return err
		}
	}
	return nil
}

// committed makes the cache fill an entry for the version the backend
// stored, once the PUT succeeded. The fill holds the bytes the payload's
// MD5 (the ETag) was computed over; Commit checks their count.
func (h *putHooks) committed(info storage.ObjectInfo) {
	if h == nil || h.fill == nil {
		return
	}
	h.handed = true
	fill, v := h.fill, versionOf(info)
	h.p.goBackground(func() {
		if err := fill.Commit(v); err != nil {
			h.p.log.Warn("cache admission on PUT not committed", "err", err)
		}
	})
}

// countingReader counts and hashes what a copy reads from its source.
type countingReader struct {
	r io.Reader
	h hash.Hash
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.h != nil {
		c.h.Write(p[:n])
	}
	return n, err
}
