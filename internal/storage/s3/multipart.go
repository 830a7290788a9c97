package s3

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/facet-sds/facet/internal/storage"
)

// uploadRecord is the sidecar of one Facet multipart upload.
type uploadRecord struct {
	Bucket    string             `json:"bucket"`
	Key       string             `json:"key"`
	Initiated time.Time          `json:"initiated"`
	Meta      storage.ObjectMeta `json:"meta"`
	// Ref is the metadata sidecar id the backend upload was created with.
	Ref string `json:"ref"`
}

// partRecord is the sidecar of one part: Facet's view plus the backend ETag
// of the part's data object.
type partRecord struct {
	Part        storage.Part `json:"part"`
	BackendETag string       `json:"betag"`
}

// minBackendPart is the smallest non-last part S3 stores (5 MiB).
const minBackendPart = 5 << 20

func (b *Backend) putJSON(ctx context.Context, key string, v any) error {
	js, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.putSmall(ctx, key, js, nil)
}

func (b *Backend) getJSON(ctx context.Context, key string, v any) error {
	js, err := b.getSmall(ctx, key)
	if err != nil {
		return err
	}
	return json.Unmarshal(js, v)
}

func partName(n int) string { return fmt.Sprintf("part-%05d", n) }

// partData names the backend object that holds part n's bytes until
// Complete.
func partData(n int) string { return fmt.Sprintf("data-%05d", n) }

// CreateUpload starts a backend multipart upload at the final key.
func (b *Backend) CreateUpload(ctx context.Context, bucket, key string, meta storage.ObjectMeta) (storage.Upload, error) {
	if key == "" {
		return storage.Upload{}, storage.ErrInvalidKey
	}
	if err := b.needBucket(ctx, bucket); err != nil {
		return storage.Upload{}, err
	}
	full := b.objKey(bucket, key)
	if err := checkKey(full); err != nil {
		return storage.Upload{}, err
	}
	ref := newID()
	cctx, cancel := b.call(ctx)
	defer cancel()
	out, err := b.cli.CreateMultipartUpload(cctx, &s3.CreateMultipartUploadInput{
		Bucket: &b.bucket, Key: &full, Metadata: map[string]string{metaRefKey: ref},
	})
	if err != nil {
		return storage.Upload{}, mapErr(err)
	}
	rec := uploadRecord{Bucket: bucket, Key: key, Initiated: time.Now().UTC(), Meta: meta, Ref: ref}
	id := aws.ToString(out.UploadId)
	if err := b.putJSON(ctx, b.uploadDir(id)+"upload", rec); err != nil {
		_, _ = b.cli.AbortMultipartUpload(cctx, &s3.AbortMultipartUploadInput{Bucket: &b.bucket, Key: &full, UploadId: out.UploadId})
		return storage.Upload{}, err
	}
	return storage.Upload{Bucket: bucket, Key: key, UploadID: id, Initiated: rec.Initiated, Meta: meta}, nil
}

func (b *Backend) upload(ctx context.Context, bucket, key, uploadID string) (uploadRecord, error) {
	var rec uploadRecord
	err := b.getJSON(ctx, b.uploadDir(uploadID)+"upload", &rec)
	if isNotFound(err) || (err == nil && (rec.Bucket != bucket || rec.Key != key)) {
		if berr := b.needBucket(ctx, bucket); berr != nil {
			return rec, berr
		}
		return rec, fmt.Errorf("s3 backend: upload %q: %w", uploadID, storage.ErrUploadNotFound)
	}
	return rec, err
}

// GetUpload reads the upload's sidecar.
func (b *Backend) GetUpload(ctx context.Context, bucket, key, uploadID string) (storage.Upload, error) {
	rec, err := b.upload(ctx, bucket, key, uploadID)
	if err != nil {
		return storage.Upload{}, err
	}
	return storage.Upload{Bucket: bucket, Key: key, UploadID: uploadID, Initiated: rec.Initiated, Meta: rec.Meta}, nil
}

// spool holds one part until Seal has accepted it: in a pooled buffer when
// it fits, in a temporary file beyond (bounded memory, known length).
type spool struct {
	b    *Backend
	bufp *[]byte
	n    int
	f    *os.File
	size int64
}

func (b *Backend) spoolPart(r io.Reader) (*spool, error) {
	s := &spool{b: b, bufp: b.pool.Get().(*[]byte)}
	n, eof, err := readFull(r, *s.bufp)
	s.n, s.size = n, int64(n)
	if err != nil || eof {
		return s, err
	}
	if s.f, err = os.CreateTemp(b.spoolDir, "facet-s3-part-*"); err != nil {
		return s, err
	}
	_ = os.Remove(s.f.Name()) // unlinked: gone with the descriptor
	if _, err := s.f.Write((*s.bufp)[:n]); err != nil {
		return s, err
	}
	m, err := io.CopyBuffer(s.f, r, *s.bufp)
	s.size += m
	return s, err
}

func (s *spool) reader() (io.ReadSeeker, error) {
	if s.f == nil {
		return bytes.NewReader((*s.bufp)[:s.n]), nil
	}
	_, err := s.f.Seek(0, io.SeekStart)
	return s.f, err
}

func (s *spool) close() {
	if s.f != nil {
		s.f.Close()
	}
	s.b.pool.Put(s.bufp)
}

// PutPart spools the part, lets Seal vet it, then stores it as an object of
// its own under the upload's directory. Parts are not backend parts yet:
// filters (compression) can shrink a part below the 5 MiB S3 requires of
// every part but the last, so which backend parts the object is made of is
// decided at Complete, when all sizes are known.
func (b *Backend) PutPart(ctx context.Context, bucket, key, uploadID string, number int, in storage.PutInput) (storage.Part, error) {
	if number < 1 || number > 10000 {
		return storage.Part{}, fmt.Errorf("s3 backend: part number %d: %w", number, storage.ErrInvalidPart)
	}
	if _, err := b.upload(ctx, bucket, key, uploadID); err != nil {
		return storage.Part{}, err
	}
	sp, err := b.spoolPart(in.Body)
	defer sp.close()
	if err != nil {
		return storage.Part{}, err
	}
	meta := in.Meta
	if in.Seal != nil {
		if err := in.Seal(&meta); err != nil {
			return storage.Part{}, err
		}
	}
	body, err := sp.reader()
	if err != nil {
		return storage.Part{}, err
	}
	dataKey := b.uploadDir(uploadID) + partData(number)
	// The part streams from the spool: bound it by the caller's context and
	// a timeout scaled to its size (1 MiB/s floor).
	cctx, cancel := context.WithTimeout(ctx, b.timeout+time.Duration(sp.size>>20)*time.Second)
	up, err := b.cli.PutObject(cctx, &s3.PutObjectInput{
		Bucket: &b.bucket, Key: &dataKey, Body: body, ContentLength: aws.Int64(sp.size),
	})
	cancel()
	if err != nil {
		return storage.Part{}, mapErr(err)
	}
	p := storage.Part{Number: number, ETag: meta.ETag, Size: meta.Size, StoredSize: sp.size,
		LastModified: time.Now().UTC(), Checksums: meta.Checksums, System: meta.System}
	if err := b.putJSON(ctx, b.uploadDir(uploadID)+partName(number), partRecord{Part: p, BackendETag: aws.ToString(up.ETag)}); err != nil {
		return storage.Part{}, err
	}
	return p, nil
}

// ListParts lists the part sidecars, which exist only for sealed parts.
func (b *Backend) ListParts(ctx context.Context, bucket, key, uploadID string, marker, max int) ([]storage.Part, bool, error) {
	if _, err := b.upload(ctx, bucket, key, uploadID); err != nil {
		return nil, false, err
	}
	if max <= 0 || max > 1000 {
		max = 1000
	}
	dir := b.uploadDir(uploadID)
	cctx, cancel := b.call(ctx)
	out, err := b.cli.ListObjectsV2(cctx, &s3.ListObjectsV2Input{
		Bucket: &b.bucket, Prefix: aws.String(dir + "part-"), StartAfter: aws.String(dir + partName(marker)), MaxKeys: aws.Int32(int32(max)),
	})
	cancel()
	if err != nil {
		return nil, false, mapErr(err)
	}
	parts := make([]storage.Part, 0, len(out.Contents))
	for _, o := range out.Contents {
		var rec partRecord
		if err := b.getJSON(ctx, aws.ToString(o.Key), &rec); err != nil {
			if isNotFound(err) {
				continue
			}
			return nil, false, err
		}
		parts = append(parts, rec.Part)
	}
	return parts, aws.ToBool(out.IsTruncated), nil
}

// CompleteUpload checks the named parts against their sidecars, writes the
// final metadata sidecar, then completes the backend upload.
func (b *Backend) CompleteUpload(ctx context.Context, bucket, key, uploadID string, parts []storage.CompletePart, meta storage.ObjectMeta) (storage.ObjectInfo, error) {
	if len(parts) == 0 {
		return storage.ObjectInfo{}, fmt.Errorf("s3 backend: complete without parts: %w", storage.ErrInvalidPart)
	}
	for i := 1; i < len(parts); i++ {
		if parts[i].Number <= parts[i-1].Number {
			return storage.ObjectInfo{}, fmt.Errorf("s3 backend: part %d after %d: %w", parts[i].Number, parts[i-1].Number, storage.ErrInvalidPartOrder)
		}
	}
	up, err := b.upload(ctx, bucket, key, uploadID)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	dir := b.uploadDir(uploadID)
	sizes := make([]int64, len(parts))
	var total int64
	for i, p := range parts {
		var rec partRecord
		if err := b.getJSON(ctx, dir+partName(p.Number), &rec); err != nil {
			if isNotFound(err) {
				return storage.ObjectInfo{}, fmt.Errorf("s3 backend: part %d not uploaded: %w", p.Number, storage.ErrInvalidPart)
			}
			return storage.ObjectInfo{}, err
		}
		if !strings.EqualFold(strings.Trim(p.ETag, `"`), strings.Trim(rec.Part.ETag, `"`)) {
			return storage.ObjectInfo{}, fmt.Errorf("s3 backend: part %d has ETag %q, not %q: %w", p.Number, rec.Part.ETag, p.ETag, storage.ErrInvalidPart)
		}
		sizes[i] = rec.Part.StoredSize
		total += rec.Part.StoredSize
	}
	meta.PartsCount = len(parts)
	meta.PartSizes = sizes
	js, err := jsonMeta(meta)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	full := b.objKey(bucket, key)
	old, oldErr := b.head(ctx, full)
	if err := b.putSmall(ctx, b.metaSidecar(up.Ref), js, sidecarTag(full)); err != nil {
		return storage.ObjectInfo{}, err
	}
	done, err := b.assemble(ctx, full, uploadID, parts, sizes)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	cctx, cancel := b.call(ctx)
	defer cancel()
	_, err = b.cli.CompleteMultipartUpload(cctx, &s3.CompleteMultipartUploadInput{
		Bucket: &b.bucket, Key: &full, UploadId: &uploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done},
	})
	if err != nil {
		err = mapErr(err)
		if isNotFound(err) {
			err = fmt.Errorf("s3 backend: upload %q: %w", uploadID, storage.ErrUploadNotFound)
		}
		return storage.ObjectInfo{}, err
	}
	if oldErr == nil && old.Metadata[metaRefKey] != up.Ref {
		b.dropMetaRef(ctx, old.Metadata)
	}
	b.dropUploadSidecars(ctx, uploadID)
	return storage.ObjectInfo{Bucket: bucket, Key: key, LastModified: time.Now().UTC(), StoredSize: total, Meta: meta}, nil
}

// assemble turns the parts' data objects into the backend parts of the
// upload at the final key. A part of at least 5 MiB met with nothing
// pending is copied server-side (UploadPartCopy: no byte through Facet);
// smaller ones are streamed through one pooled buffer and cut into parts
// of the buffer's size, so every backend part but the last is big enough
// whatever the filters made of the client's parts.
func (b *Backend) assemble(ctx context.Context, full, uploadID string, parts []storage.CompletePart, sizes []int64) ([]types.CompletedPart, error) {
	dir := b.uploadDir(uploadID)
	bufp := b.pool.Get().(*[]byte)
	defer b.pool.Put(bufp)
	buf := *bufp
	var done []types.CompletedPart
	n := 0 // bytes pending in buf
	flush := func() error {
		num := int32(len(done) + 1)
		cctx, cancel := context.WithTimeout(ctx, b.timeout+time.Duration(n>>20)*time.Second)
		defer cancel()
		up, err := b.cli.UploadPart(cctx, &s3.UploadPartInput{
			Bucket: &b.bucket, Key: &full, UploadId: &uploadID, PartNumber: aws.Int32(num),
			Body: bytes.NewReader(buf[:n]), ContentLength: aws.Int64(int64(n)),
		})
		if err != nil {
			return b.uploadErr(uploadID, err)
		}
		done = append(done, types.CompletedPart{PartNumber: aws.Int32(num), ETag: up.ETag})
		n = 0
		return nil
	}
	for i, p := range parts {
		src := dir + partData(p.Number)
		if n == 0 && sizes[i] >= minBackendPart {
			num := int32(len(done) + 1)
			cctx, cancel := context.WithTimeout(ctx, b.timeout+time.Duration(sizes[i]>>20)*time.Second)
			up, err := b.cli.UploadPartCopy(cctx, &s3.UploadPartCopyInput{
				Bucket: &b.bucket, Key: &full, UploadId: &uploadID, PartNumber: aws.Int32(num),
				CopySource: aws.String(b.bucket + "/" + escapePath(src)),
			})
			cancel()
			if err != nil {
				return nil, b.uploadErr(uploadID, err)
			}
			done = append(done, types.CompletedPart{PartNumber: aws.Int32(num), ETag: up.CopyPartResult.ETag})
			continue
		}
		body, err := b.getKey(ctx, src, sizes[i])
		if err != nil {
			return nil, err
		}
		for {
			m, eof, err := readFull(body, buf[n:])
			n += m
			if err != nil {
				body.Close()
				return nil, mapErr(err)
			}
			if n == len(buf) {
				if err := flush(); err != nil {
					body.Close()
					return nil, err
				}
			}
			if eof {
				break
			}
		}
		body.Close()
	}
	if n > 0 || len(done) == 0 {
		if err := flush(); err != nil {
			return nil, err
		}
	}
	return done, nil
}

// getKey streams a backend object of about size bytes by its full key,
// under a timeout scaled to its size (1 MiB/s floor).
func (b *Backend) getKey(ctx context.Context, key string, size int64) (io.ReadCloser, error) {
	cctx, cancel := context.WithTimeout(ctx, b.timeout+time.Duration(size>>20)*time.Second)
	out, err := b.cli.GetObject(cctx, &s3.GetObjectInput{Bucket: &b.bucket, Key: &key})
	if err != nil {
		cancel()
		return nil, mapErr(err)
	}
	return &cancelOnClose{ReadCloser: out.Body, cancel: cancel, bufs: &b.copyBufs}, nil
}

func (b *Backend) uploadErr(uploadID string, err error) error {
	err = mapErr(err)
	if isNotFound(err) {
		err = fmt.Errorf("s3 backend: upload %q: %w", uploadID, storage.ErrUploadNotFound)
	}
	return err
}

// dropUploadSidecars removes an upload's records, best effort.
func (b *Backend) dropUploadSidecars(ctx context.Context, uploadID string) {
	ctx = context.WithoutCancel(ctx)
	dir := b.uploadDir(uploadID)
	var token *string
	for {
		cctx, cancel := b.call(ctx)
		out, err := b.cli.ListObjectsV2(cctx, &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: &dir, ContinuationToken: token})
		cancel()
		if err != nil {
			return
		}
		for _, o := range out.Contents {
			_ = b.deleteKey(ctx, aws.ToString(o.Key))
		}
		if !aws.ToBool(out.IsTruncated) {
			return
		}
		token = out.NextContinuationToken
	}
}

// AbortUpload aborts the backend upload and drops the sidecars.
func (b *Backend) AbortUpload(ctx context.Context, bucket, key, uploadID string) error {
	up, err := b.upload(ctx, bucket, key, uploadID)
	if err != nil {
		return err
	}
	full := b.objKey(bucket, key)
	cctx, cancel := b.call(ctx)
	_, err = b.cli.AbortMultipartUpload(cctx, &s3.AbortMultipartUploadInput{Bucket: &b.bucket, Key: &full, UploadId: &uploadID})
	cancel()
	// Gone at the backend already (a concurrent abort or complete): the
	// sidecars are what remain to clean.
	if err = mapErr(err); err != nil && !isNotFound(err) && !errors.Is(err, storage.ErrUploadNotFound) {
		return err
	}
	_ = b.deleteKey(ctx, b.metaSidecar(up.Ref))
	b.dropUploadSidecars(ctx, uploadID)
	return nil
}

// ListUploads lists the backend's uploads under the bucket, keeping those
// with a Facet sidecar (the others are PutObject's own streaming uploads).
func (b *Backend) ListUploads(ctx context.Context, bucket string, opts storage.ListUploadsOptions) (storage.ListUploadsResult, error) {
	if err := b.needBucket(ctx, bucket); err != nil {
		return storage.ListUploadsResult{}, err
	}
	base := b.root + bucket + "/"
	max := opts.MaxUploads
	if max <= 0 || max > 1000 {
		max = 1000
	}
	in := &s3.ListMultipartUploadsInput{Bucket: &b.bucket, Prefix: aws.String(base + opts.Prefix), MaxUploads: aws.Int32(int32(max))}
	if opts.Delimiter != "" {
		in.Delimiter = aws.String(opts.Delimiter)
	}
	if opts.KeyMarker != "" {
		in.KeyMarker = aws.String(base + opts.KeyMarker)
		if opts.UploadIDMarker != "" {
			in.UploadIdMarker = aws.String(opts.UploadIDMarker)
		}
	}
	cctx, cancel := b.call(ctx)
	out, err := b.cli.ListMultipartUploads(cctx, in)
	cancel()
	if err != nil {
		return storage.ListUploadsResult{}, mapErr(err)
	}
	res := storage.ListUploadsResult{IsTruncated: aws.ToBool(out.IsTruncated)}
	for _, cp := range out.CommonPrefixes {
		res.CommonPrefixes = append(res.CommonPrefixes, strings.TrimPrefix(aws.ToString(cp.Prefix), base))
	}
	for _, u := range out.Uploads {
		key := strings.TrimPrefix(aws.ToString(u.Key), base)
		id := aws.ToString(u.UploadId)
		var rec uploadRecord
		if err := b.getJSON(ctx, b.uploadDir(id)+"upload", &rec); err != nil {
			if isNotFound(err) {
				continue
			}
			return storage.ListUploadsResult{}, err
		}
		res.Uploads = append(res.Uploads, storage.Upload{Bucket: bucket, Key: key, UploadID: id, Initiated: rec.Initiated, Meta: rec.Meta})
	}
	if res.IsTruncated {
		res.NextKeyMarker = strings.TrimPrefix(aws.ToString(out.NextKeyMarker), base)
		res.NextUploadIDMarker = aws.ToString(out.NextUploadIdMarker)
	}
	return res, nil
}
