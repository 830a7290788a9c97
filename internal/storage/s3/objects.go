package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/facet-sds/facet/internal/storage"
)

func (b *Backend) putSmall(ctx context.Context, key string, data []byte, um map[string]string) error {
	cctx, cancel := b.call(ctx)
	defer cancel()
	return mapErr(b.raw.put(cctx, key, data, um))
}

func (b *Backend) getSmall(ctx context.Context, key string) ([]byte, error) {
	cctx, cancel := b.call(ctx)
	defer cancel()
	out, err := b.raw.get(cctx, key, "")
	if err != nil {
		return nil, mapErr(err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(io.LimitReader(out.Body, 1<<20))
	return data, mapErr(err)
}

func (b *Backend) deleteKey(ctx context.Context, key string) error {
	cctx, cancel := b.call(ctx)
	defer cancel()
	err := mapErr(b.raw.del(cctx, key))
	if isNotFound(err) {
		return nil
	}
	return err
}

func (b *Backend) head(ctx context.Context, key string) (*s3.HeadObjectOutput, error) {
	cctx, cancel := b.call(ctx)
	defer cancel()
	out, err := b.raw.head(cctx, key)
	return out, mapErr(err)
}

// CreateBucket writes the bucket's marker object.
func (b *Backend) CreateBucket(ctx context.Context, bucket string) error {
	ok, err := b.BucketExists(ctx, bucket)
	if err != nil {
		return err
	}
	if ok {
		return fmt.Errorf("s3 backend: bucket %q: %w", bucket, storage.ErrBucketExists)
	}
	if err := b.putSmall(ctx, b.markerKey(bucket), nil, nil); err != nil {
		return err
	}
	b.known.Store(bucket, time.Now())
	return nil
}

// BucketExists checks the bucket's marker object (always in the backend).
func (b *Backend) BucketExists(ctx context.Context, bucket string) (bool, error) {
	_, err := b.head(ctx, b.markerKey(bucket))
	if isNotFound(err) {
		b.known.Delete(bucket)
		return false, nil
	}
	if err == nil {
		b.known.Store(bucket, time.Now())
	}
	return err == nil, err
}

// bucketTTL is how long a bucket seen to exist is taken to exist without
// asking the backend again. The S3 front end has checked the bucket's
// owner in the metadata store before any object call, so this only bounds
// how long a bucket deleted through another gateway can receive a write
// that raced the deletion.
const bucketTTL = 5 * time.Second

func (b *Backend) needBucket(ctx context.Context, bucket string) error {
	if at, ok := b.known.Load(bucket); ok && time.Since(at.(time.Time)) < bucketTTL {
		return nil
	}
	ok, err := b.BucketExists(ctx, bucket)
	if err == nil && !ok {
		err = fmt.Errorf("s3 backend: bucket %q: %w", bucket, storage.ErrBucketNotFound)
	}
	return err
}

// notFound picks ErrBucketNotFound over ErrObjectNotFound when the bucket is
// the thing missing, checking only on the (rare) miss path.
func (b *Backend) notFound(ctx context.Context, bucket string, err error) error {
	if !isNotFound(err) {
		return err
	}
	if berr := b.needBucket(ctx, bucket); berr != nil {
		return berr
	}
	return err
}

// DeleteBucket removes a Facet bucket that holds no objects. Its open
// multipart uploads are aborted on the backend first, as S3 does (uploads
// alone do not keep a bucket alive), the backend's own streaming uploads
// of interrupted PutObjects included, so nothing under the bucket's prefix
// outlives it.
func (b *Backend) DeleteBucket(ctx context.Context, bucket string) error {
	if err := b.needBucket(ctx, bucket); err != nil {
		return err
	}
	if err := b.checkNoObjects(ctx, bucket); err != nil {
		return err
	}
	if err := b.abortAllUploads(ctx, bucket); err != nil {
		return err
	}
	// A CompleteMultipartUpload that won the race with the aborts made an
	// object: that keeps the bucket, as it would have a moment earlier.
	if err := b.checkNoObjects(ctx, bucket); err != nil {
		return err
	}
	b.known.Delete(bucket)
	return b.deleteKey(ctx, b.markerKey(bucket))
}

// checkNoObjects fails with storage.ErrBucketNotEmpty when an object is
// stored under the bucket's prefix.
func (b *Backend) checkNoObjects(ctx context.Context, bucket string) error {
	prefix := b.root + bucket + "/"
	cctx, cancel := b.call(ctx)
	defer cancel()
	lo, err := b.cli.ListObjectsV2(cctx, &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: &prefix, MaxKeys: aws.Int32(1)})
	if err != nil {
		return mapErr(err)
	}
	if len(lo.Contents) > 0 {
		return fmt.Errorf("s3 backend: bucket %q: %w", bucket, storage.ErrBucketNotEmpty)
	}
	return nil
}

// abortAllUploads aborts every backend upload under the bucket's prefix:
// Facet's (with their sidecars) through AbortUpload, the others directly.
func (b *Backend) abortAllUploads(ctx context.Context, bucket string) error {
	prefix := b.root + bucket + "/"
	in := &s3.ListMultipartUploadsInput{Bucket: &b.bucket, Prefix: &prefix}
	for {
		cctx, cancel := b.call(ctx)
		lu, err := b.cli.ListMultipartUploads(cctx, in)
		cancel()
		if err != nil {
			return mapErr(err)
		}
		for _, u := range lu.Uploads {
			full, id := aws.ToString(u.Key), aws.ToString(u.UploadId)
			err := b.AbortUpload(ctx, bucket, strings.TrimPrefix(full, prefix), id)
			if errors.Is(err, storage.ErrUploadNotFound) {
				// No Facet sidecar: a streaming PutObject's own upload.
				cctx, cancel := b.call(ctx)
				_, err = b.cli.AbortMultipartUpload(cctx, &s3.AbortMultipartUploadInput{Bucket: &b.bucket, Key: &full, UploadId: &id})
				cancel()
				if err = mapErr(err); errors.Is(err, storage.ErrUploadNotFound) || isNotFound(err) {
					err = nil
				}
			}
			if err != nil {
				return fmt.Errorf("s3 backend: bucket %q: abort upload %q: %w", bucket, id, err)
			}
		}
		if !aws.ToBool(lu.IsTruncated) {
			return nil
		}
		in.KeyMarker, in.UploadIdMarker = lu.NextKeyMarker, lu.NextUploadIdMarker
	}
}

// readFull fills buf from r, returning how many bytes and whether r ended.
// Unlike io.ReadFull it tells a clean EOF from a reader's own
// io.ErrUnexpectedEOF (a client that hung up mid-body).
func readFull(r io.Reader, buf []byte) (int, bool, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err == io.EOF {
			return n, true, nil
		}
		if err != nil {
			return n, false, err
		}
	}
	return n, false, nil
}

// PutObject stores in.Body; see docs/backends.md for how Seal precedes
// visibility.
func (b *Backend) PutObject(ctx context.Context, bucket, key string, in storage.PutInput) (storage.ObjectInfo, error) {
	if key == "" {
		return storage.ObjectInfo{}, storage.ErrInvalidKey
	}
	if err := b.needBucket(ctx, bucket); err != nil {
		return storage.ObjectInfo{}, err
	}
	full := b.objKey(bucket, key)
	if err := checkKey(full); err != nil {
		return storage.ObjectInfo{}, err
	}
	// Most objects are small: read into a small buffer first, and take a
	// part-sized one (whose allocation, when the pool is empty after a GC,
	// costs more than a small PUT) only for a body that does not fit.
	smallp := b.small.Get().(*[]byte)
	defer b.small.Put(smallp)
	buf := *smallp
	n, eof, err := readFull(in.Body, buf)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	if !eof {
		bufp := b.pool.Get().(*[]byte)
		defer b.pool.Put(bufp)
		copy(*bufp, buf[:n])
		var m int
		m, eof, err = readFull(in.Body, (*bufp)[n:])
		if err != nil {
			return storage.ObjectInfo{}, err
		}
		buf, n = *bufp, n+m
	}
	meta := in.Meta
	var stored int64
	var newRef string
	if eof {
		if in.Seal != nil {
			if err := in.Seal(&meta); err != nil {
				return storage.ObjectInfo{}, err
			}
		}
		um, err := b.encodeMeta(ctx, full, meta)
		if err != nil {
			return storage.ObjectInfo{}, err
		}
		if err := b.putSmall(ctx, full, buf[:n], um); err != nil {
			b.dropMetaRef(ctx, um)
			return storage.ObjectInfo{}, err
		}
		stored, newRef = int64(n), um[metaRefKey]
	} else {
		// The object being replaced may point at a metadata sidecar,
		// deleted once the new object is in place. Its HEAD runs while
		// the parts upload: it is done long before the Complete that
		// makes the new object visible, and if it were not, it would see
		// the new object's own sidecar, which is never deleted (the ref
		// comparison below), and the sweep would collect the old one.
		// A small PUT sends no HEAD: one backend round trip is most of
		// its cost, and what it would find (a sidecar, left by a streamed
		// object or very large metadata) the sweep collects.
		type headResult struct {
			out *s3.HeadObjectOutput
			err error
		}
		oldc := make(chan headResult, 1)
		go func() {
			out, err := b.head(ctx, full)
			oldc <- headResult{out, err}
		}()
		stored, newRef, err = b.putStream(ctx, full, buf, n, in.Body, &meta, in.Seal)
		old := <-oldc
		if err != nil {
			return storage.ObjectInfo{}, err
		}
		if old.err == nil && old.out.Metadata[metaRefKey] != newRef {
			b.dropMetaRef(ctx, old.out.Metadata)
		}
	}
	return storage.ObjectInfo{Bucket: bucket, Key: key, LastModified: time.Now().UTC(), StoredSize: stored, Meta: meta}, nil
}

// putStream uploads a body longer than one part as a backend multipart
// upload at the final key; the object appears only at Complete, after Seal.
func (b *Backend) putStream(ctx context.Context, full string, buf []byte, n int, body io.Reader, meta *storage.ObjectMeta, seal func(*storage.ObjectMeta) error) (int64, string, error) {
	// The metadata is known only after Seal, but S3 fixes user metadata at
	// CreateMultipartUpload: point at a sidecar id chosen now and written
	// before Complete.
	ref := newID()
	cctx, cancel := b.call(ctx)
	cu, err := b.cli.CreateMultipartUpload(cctx, &s3.CreateMultipartUploadInput{
		Bucket: &b.bucket, Key: &full, Metadata: map[string]string{metaRefKey: ref},
	})
	cancel()
	if err != nil {
		return 0, "", mapErr(err)
	}
	done := false
	defer func() {
		if !done {
			actx, cancel := b.call(context.WithoutCancel(ctx))
			_, _ = b.cli.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{Bucket: &b.bucket, Key: &full, UploadId: cu.UploadId})
			cancel()
			_ = b.deleteKey(context.WithoutCancel(ctx), b.metaSidecar(ref))
		}
	}()
	parts, total, err := b.uploadParts(ctx, full, cu.UploadId, buf, n, body)
	if err != nil {
		return 0, "", err
	}
	if seal != nil {
		if err := seal(meta); err != nil {
			return 0, "", err
		}
	}
	js, err := jsonMeta(*meta)
	if err != nil {
		return 0, "", err
	}
	if err := b.putSmall(ctx, b.metaSidecar(ref), js, sidecarTag(full)); err != nil {
		return 0, "", err
	}
	cctx, cancel = b.call(ctx)
	defer cancel()
	_, err = b.cli.CompleteMultipartUpload(cctx, &s3.CompleteMultipartUploadInput{
		Bucket: &b.bucket, Key: &full, UploadId: cu.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	if err != nil {
		return 0, "", mapErr(err)
	}
	done = true
	return total, ref, nil
}

// partsInFlight bounds the part uploads one streamed PutObject runs at
// once, so that reading the client's next part overlaps sending the
// previous ones (memory: one pooled buffer more than this per PUT).
const partsInFlight = 3

// uploadParts sends body as the parts of a backend upload, buf[:n] first,
// up to partsInFlight at a time, each from a pooled buffer of the part
// size; the parts come back in order.
func (b *Backend) uploadParts(ctx context.Context, full string, uploadID *string, buf []byte, n int, body io.Reader) ([]types.CompletedPart, int64, error) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		parts    []types.CompletedPart
		firstErr error
		total    int64
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	failed := func() bool { mu.Lock(); defer mu.Unlock(); return firstErr != nil }
	sem := make(chan struct{}, partsInFlight)
	cur, curp := buf, (*[]byte)(nil) // the caller's buffer is not pooled here
	for num := int32(1); ; num++ {
		if num > 10000 {
			fail(fmt.Errorf("s3 backend: object exceeds 10000 parts of %d bytes", len(buf)))
			if curp != nil {
				b.pool.Put(curp)
			}
			break
		}
		sem <- struct{}{}
		if failed() {
			<-sem
			if curp != nil {
				b.pool.Put(curp)
			}
			break
		}
		wg.Add(1)
		go func(num int32, data []byte, release *[]byte) {
			defer wg.Done()
			defer func() { <-sem }()
			if release != nil {
				defer b.pool.Put(release)
			}
			cctx, cancel := b.call(ctx)
			up, err := b.cli.UploadPart(cctx, &s3.UploadPartInput{
				Bucket: &b.bucket, Key: &full, UploadId: uploadID, PartNumber: aws.Int32(num),
				Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
			})
			cancel()
			if err != nil {
				fail(mapErr(err))
				return
			}
			mu.Lock()
			parts = append(parts, types.CompletedPart{ETag: up.ETag, PartNumber: aws.Int32(num)})
			mu.Unlock()
		}(num, cur[:n], curp)
		total += int64(n)
		// The caller's buffer may still be in flight: read into another.
		nextp := b.pool.Get().(*[]byte)
		m, eof, err := readFull(body, *nextp)
		if err != nil || (eof && m == 0) {
			b.pool.Put(nextp)
			if err != nil {
				fail(err)
			}
			break
		}
		cur, curp, n = *nextp, nextp, m
	}
	wg.Wait()
	if firstErr != nil {
		return nil, 0, firstErr
	}
	slices.SortFunc(parts, func(a, b types.CompletedPart) int { return int(aws.ToInt32(a.PartNumber) - aws.ToInt32(b.PartNumber)) })
	return parts, total, nil
}

// GetObject streams the stored bytes; ranges pass through to the backend.
func (b *Backend) GetObject(ctx context.Context, bucket, key string, rng *storage.Range) (io.ReadCloser, storage.ObjectInfo, error) {
	full := b.objKey(bucket, key)
	var hdrRange string
	if rng != nil {
		if rng.Start < 0 || rng.Length <= 0 {
			return nil, storage.ObjectInfo{}, storage.ErrInvalidRange
		}
		hdrRange = fmt.Sprintf("bytes=%d-%d", rng.Start, rng.Start+rng.Length-1)
	}
	// Three tries: a concurrent overwrite may delete the sidecar the
	// object pointed at before it is read; the next GetObject sees the
	// new object.
	for try := 1; ; try++ {
		rc, info, err := b.getObject(ctx, bucket, key, full, hdrRange, rng)
		if err == nil || try == 3 || !errors.Is(err, errSidecarGone) {
			return rc, info, err
		}
	}
}

// errSidecarGone marks a metadata sidecar missing when its object was read.
var errSidecarGone = errors.New("metadata sidecar gone")

func (b *Backend) getObject(ctx context.Context, bucket, key, full, hdrRange string, rng *storage.Range) (io.ReadCloser, storage.ObjectInfo, error) {
	// The body streams for as long as the caller reads, so b.timeout bounds
	// the wait for the response (all SDK retries included) and then each
	// read of the body (a backend that stops sending mid-body), never the
	// whole GET nor the time the caller spends between reads (a slow
	// client). One timer does both: it cancels the request when it fires.
	gctx, cancel := context.WithCancel(ctx)
	body := &cancelOnClose{cancel: cancel, bufs: &b.copyBufs, limit: b.timeout}
	timer := time.AfterFunc(b.timeout, body.expire)
	body.idle = timer
	out, err := b.raw.get(gctx, full, hdrRange)
	if !timer.Stop() && err == nil {
		out.Body.Close()
		err = context.DeadlineExceeded
	}
	if err != nil {
		cancel()
		if ctx.Err() == nil && gctx.Err() != nil {
			err = fmt.Errorf("%w: no answer within %v: %w", storage.ErrUnavailable, b.timeout, err)
		}
		return nil, storage.ObjectInfo{}, b.notFound(ctx, bucket, mapErr(err))
	}
	meta, err := b.decodeMeta(ctx, out.Metadata)
	if err != nil {
		out.Body.Close()
		cancel()
		if isNotFound(err) {
			err = fmt.Errorf("%w: %w", errSidecarGone, err)
		}
		return nil, storage.ObjectInfo{}, err
	}
	size := aws.ToInt64(out.ContentLength)
	if cr := aws.ToString(out.ContentRange); cr != "" {
		if i := strings.LastIndexByte(cr, '/'); i >= 0 {
			fmt.Sscan(cr[i+1:], &size)
		}
	}
	if rng != nil && rng.Start >= size {
		out.Body.Close()
		cancel()
		return nil, storage.ObjectInfo{}, storage.ErrInvalidRange
	}
	info := storage.ObjectInfo{Bucket: bucket, Key: key, LastModified: aws.ToTime(out.LastModified), StoredSize: size, Meta: meta}
	body.ReadCloser = out.Body
	return body, info, nil
}

// cancelOnClose releases a GET's context with its body. With idle set, a
// read of the body that gets nothing for limit cancels the request and
// fails with storage.ErrUnavailable.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
	bufs   *sync.Pool // copyBuf-sized buffers
	// idle, when not nil, is armed for limit during each Read; stalled
	// records that it fired.
	idle    *time.Timer
	limit   time.Duration
	stalled atomic.Bool
}

// expire is idle's action: the backend sent nothing for limit.
func (c *cancelOnClose) expire() {
	c.stalled.Store(true)
	c.cancel()
}

func (c *cancelOnClose) Read(p []byte) (int, error) {
	if c.idle == nil {
		return c.ReadCloser.Read(p)
	}
	c.idle.Reset(c.limit)
	n, err := c.ReadCloser.Read(p)
	c.idle.Stop()
	if err != nil && err != io.EOF && c.stalled.Load() {
		err = fmt.Errorf("%w: the backend sent no data for %v: %w", storage.ErrUnavailable, c.limit, err)
	}
	return n, err
}

// copyBuf is the buffer a GET body is copied out with. io.Copy's 32 KiB
// makes a 64 MiB GET 2048 reads from the backend connection and 2048
// writes to the client's, each a system call.
const copyBuf = 256 << 10

// WriteTo copies the body to w in copyBuf pieces (io.Copy prefers it).
func (c *cancelOnClose) WriteTo(w io.Writer) (int64, error) {
	bp := c.bufs.Get().(*[]byte)
	defer c.bufs.Put(bp)
	// Neither side's own fast path: the body has none, and w's ReadFrom
	// (net/http's) would copy with 32 KiB again.
	return io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{readOnly{c}}, *bp)
}

// readOnly hides cancelOnClose's WriteTo from io.CopyBuffer.
type readOnly struct{ c *cancelOnClose }

func (r readOnly) Read(p []byte) (int, error) { return r.c.Read(p) }

func (c *cancelOnClose) Close() error {
	if c.idle != nil {
		c.idle.Stop()
	}
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// HeadObject reads the object's metadata.
func (b *Backend) HeadObject(ctx context.Context, bucket, key string) (storage.ObjectInfo, error) {
	full := b.objKey(bucket, key)
	var err error
	// Two tries: a concurrent overwrite may delete the sidecar the first
	// HEAD pointed at.
	for range 2 {
		var out *s3.HeadObjectOutput
		out, err = b.head(ctx, full)
		if err != nil {
			return storage.ObjectInfo{}, b.notFound(ctx, bucket, err)
		}
		var meta storage.ObjectMeta
		meta, err = b.decodeMeta(ctx, out.Metadata)
		if err == nil {
			return storage.ObjectInfo{Bucket: bucket, Key: key, LastModified: aws.ToTime(out.LastModified),
				StoredSize: aws.ToInt64(out.ContentLength), Meta: meta}, nil
		}
	}
	return storage.ObjectInfo{}, err
}

// DeleteObject removes the object and its metadata sidecar, if any.
func (b *Backend) DeleteObject(ctx context.Context, bucket, key string) error {
	if err := b.needBucket(ctx, bucket); err != nil {
		return err
	}
	full := b.objKey(bucket, key)
	old, err := b.head(ctx, full)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := b.deleteKey(ctx, full); err != nil {
		return err
	}
	b.dropMetaRef(ctx, old.Metadata)
	return nil
}

// UpdateMeta replaces the metadata with a server-side self-copy.
func (b *Backend) UpdateMeta(ctx context.Context, bucket, key string, meta storage.ObjectMeta) (storage.ObjectInfo, error) {
	full := b.objKey(bucket, key)
	old, err := b.head(ctx, full)
	if err != nil {
		return storage.ObjectInfo{}, b.notFound(ctx, bucket, err)
	}
	um, err := b.encodeMeta(ctx, full, meta)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	cctx, cancel := b.call(ctx)
	defer cancel()
	out, err := b.cli.CopyObject(cctx, &s3.CopyObjectInput{
		Bucket: &b.bucket, Key: &full, CopySource: aws.String(b.bucket + "/" + escapePath(full)),
		Metadata: um, MetadataDirective: types.MetadataDirectiveReplace,
	})
	if err != nil {
		b.dropMetaRef(ctx, um)
		return storage.ObjectInfo{}, b.notFound(ctx, bucket, mapErr(err))
	}
	b.dropMetaRef(ctx, old.Metadata)
	mod := time.Now().UTC()
	if out.CopyObjectResult != nil && out.CopyObjectResult.LastModified != nil {
		mod = *out.CopyObjectResult.LastModified
	}
	return storage.ObjectInfo{Bucket: bucket, Key: key, LastModified: mod, StoredSize: aws.ToInt64(old.ContentLength), Meta: meta}, nil
}

// escapePath percent-encodes a key for x-amz-copy-source, keeping '/'.
func escapePath(k string) string {
	var sb strings.Builder
	for _, c := range []byte(k) {
		if c == '/' || c == '-' || c == '_' || c == '.' || c == '~' ||
			(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') {
			sb.WriteByte(c)
		} else {
			fmt.Fprintf(&sb, "%%%02X", c)
		}
	}
	return sb.String()
}
