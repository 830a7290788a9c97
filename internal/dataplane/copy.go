package dataplane

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
)

// Copies read the source as a GET of it does (its recorded filters
// undone, refused when a GET transform would be read past) and write the
// destination as a PUT does: filtered as the destination's policies say
// now, the source's own reverse plan staying with it.

// CopySource is the object a copy reads.
type CopySource struct {
	Bucket, Key string
	// VersionID names the version copied, "" the latest.
	VersionID string
	// Conditions are the copy's conditions on the source; they fail as
	// PreconditionFailed, never NotModified.
	Conditions Conditions
	// Authorize checks that the requester may read Bucket. It is called
	// before the source is read, except for a copy onto itself.
	Authorize func(ctx context.Context, bucket string) error
}

// CopyRequest is a copy of a whole object onto Target.
type CopyRequest struct {
	Target
	Source CopySource
	// Replace, when set, is the metadata the client set for the copy; nil
	// keeps the source's.
	Replace *storage.ObjectMeta
}

// Copy copies an object. A copy onto itself replaces its metadata only.
func (p *Plane) Copy(ctx context.Context, req CopyRequest) (storage.ObjectInfo, error) {
	bucket, key := req.Bucket, req.Key
	src := req.Source
	var replaced storage.ObjectMeta
	if req.Replace != nil {
		replaced = *req.Replace
		if _, err := p.prepareMeta(ctx, req.Target, &replaced, -1, false); err != nil {
			return storage.ObjectInfo{}, err
		}
	}
	if src.Bucket == bucket && src.Key == key && src.VersionID == "" {
		info, err := p.backend.HeadObject(ctx, bucket, key)
		if err != nil {
			return storage.ObjectInfo{}, S3Error(err, bucket, key)
		}
		if err := src.Conditions.eval(info, true); err != nil {
			return storage.ObjectInfo{}, err
		}
		info.Meta = replaceUserMeta(info.Meta, replaced)
		info, err = p.backend.UpdateMeta(ctx, bucket, key, info.Meta)
		p.changed(bucket, key)
		if err != nil {
			return storage.ObjectInfo{}, S3Error(err, bucket, key)
		}
		return info, nil
	}
	// A copy of a named version, onto its own key too (how S3 restores
	// an old version), reads that version and writes a new one.
	ctx = pinVersion(ctx, src.Bucket, src.Key, src.VersionID)
	rc, info, _, err := p.openCopySource(ctx, req.Target, src, nil)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	defer rc.Close()
	meta := info.Meta
	if req.Replace != nil {
		meta = replaceUserMeta(meta, replaced)
	}
	// The copy is what the client wrote, filtered as the destination's
	// policies say now; the source's own reverse plan stays with it.
	meta.System = withoutPlans(meta.System)
	counted := &countingReader{r: rc, h: md5.New()}
	body, sealPlan, err := p.encodeForStorage(ctx, req.Target, info.Meta.Size, meta, counted)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	out, err := p.backend.PutObject(writeContext(ctx), bucket, key, storage.PutInput{Body: body, Meta: meta, Declared: info.Meta.Size, Seal: func(m *storage.ObjectMeta) error {
		if counted.n != info.Meta.Size {
			return fmt.Errorf("copy source changed during copy: read %d of %d bytes", counted.n, info.Meta.Size)
		}
		return sealPlan(m)
	}})
	p.changed(bucket, key)
	if err != nil {
		return storage.ObjectInfo{}, S3Error(err, bucket, key)
	}
	return out, nil
}

// CopyPartRequest is a copy of (a range of) an object into a part of a
// multipart upload.
type CopyPartRequest struct {
	Target
	UploadID string
	Number   int
	// Upload is the upload's metadata (see PartRequest).
	Upload storage.ObjectMeta
	Source CopySource
	// Range picks the bytes to copy once the source's size is known; nil
	// copies it all.
	Range func(size int64) (*storage.Range, error)
	// Limit bounds the part's size.
	Limit int64
}

// CopyPart copies (a range of) an object into a part.
func (p *Plane) CopyPart(ctx context.Context, req CopyPartRequest) (storage.Part, error) {
	bucket, key := req.Bucket, req.Key
	ctx = pinVersion(ctx, req.Source.Bucket, req.Source.Key, req.Source.VersionID)
	rc, src, rng, err := p.openCopySource(ctx, req.Target, req.Source, req.Range)
	if err != nil {
		return storage.Part{}, err
	}
	defer rc.Close()
	length := src.Meta.Size
	if rng != nil {
		length = rng.Length
	}
	if length > req.Limit {
		return storage.Part{}, s3err.New(s3err.EntityTooLarge)
	}
	counted := &countingReader{r: rc, h: md5.New()}
	body, sealPlan, err := p.encodeForStorage(ctx, req.Target, length, req.Upload, counted)
	if err != nil {
		return storage.Part{}, err
	}
	part, err := p.backend.PutPart(writeContext(ctx), bucket, key, req.UploadID, req.Number, storage.PutInput{
		Body:     body,
		Declared: length,
		Seal: func(m *storage.ObjectMeta) error {
			if counted.n != length {
				return fmt.Errorf("copy source changed during copy: read %d of %d bytes", counted.n, length)
			}
			m.Size, m.ETag = length, hex.EncodeToString(counted.h.Sum(nil))
			return sealPlan(m)
		},
	})
	if err != nil {
		return storage.Part{}, S3Error(err, bucket, key)
	}
	return part, nil
}

// openCopySource authorizes and opens the source of a copy onto dst,
// checking its conditions.
func (p *Plane) openCopySource(ctx context.Context, dst Target, src CopySource, rng func(size int64) (*storage.Range, error)) (io.ReadCloser, storage.ObjectInfo, *storage.Range, error) {
	if src.Authorize != nil {
		if err := src.Authorize(ctx, src.Bucket); err != nil {
			return nil, storage.ObjectInfo{}, nil, err
		}
	}
	info, err := p.backend.HeadObject(ctx, src.Bucket, src.Key)
	if err != nil {
		return nil, storage.ObjectInfo{}, nil, S3Error(err, src.Bucket, src.Key)
	}
	if err := src.Conditions.eval(info, true); err != nil {
		return nil, storage.ObjectInfo{}, nil, err
	}
	// A copy reads the source as a GET of it does.
	st := dst
	st.Bucket, st.Key = src.Bucket, src.Key
	if err := p.bypassesTransforms(st, info, "a copy"); err != nil {
		return nil, storage.ObjectInfo{}, nil, err
	}
	var r *storage.Range
	if rng != nil {
		if r, err = rng(info.Meta.Size); err != nil {
			return nil, storage.ObjectInfo{}, nil, err
		}
	}
	rc, err := p.openLogical(ctx, dst, p.backend, info, r)
	if err != nil {
		return nil, storage.ObjectInfo{}, nil, decodeErr(err, src.Bucket, src.Key)
	}
	return rc, info, r, nil
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

// withoutPlans copies system metadata without reverse plans: a copy's or
// a completed upload's own are recorded anew.
func withoutPlans(sys map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range sys {
		if k != PlanKey && k != PartsKey {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
