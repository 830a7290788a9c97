package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/facet-sds/facet/internal/storage"
)

// Peeking. The S3 front end reads an object's metadata (HeadObject) before
// it reads the object (GetObject): over a remote store that is two round
// trips for every GET. HeadObject therefore asks for the object's first
// peekSize bytes instead of a bare HEAD; when that is the whole object it
// is kept, and the GetObject that follows within peekTTL is answered from
// it with the metadata it came with. What GetObject returns is always one
// object's bytes with that object's metadata, as the contract asks; it can
// be the version HeadObject saw just before, which the front end checks
// anyway (it compares ETag and modification time with its own HeadObject
// and reads again when an overwrite landed in between). An entry serves
// one GetObject.

const (
	peekSize = 32 << 10
	peekTTL  = time.Second
	// peekMax bounds the entries kept at once (HEADs not followed by a
	// GET leave theirs behind); beyond it the map is emptied.
	peekMax = 1024
)

type peeked struct {
	at   time.Time
	info storage.ObjectInfo
	body []byte
}

type peeks struct {
	m sync.Map // full key -> *peeked
	n atomic.Int64
}

func (p *peeks) put(key string, e *peeked) {
	if p.n.Add(1) > peekMax {
		p.m.Clear()
		p.n.Store(1)
	}
	p.m.Store(key, e)
}

// take returns and forgets a fresh entry for key.
func (p *peeks) take(key string) (*peeked, bool) {
	v, ok := p.m.LoadAndDelete(key)
	if !ok {
		return nil, false
	}
	p.n.Add(-1)
	e := v.(*peeked)
	return e, time.Since(e.at) < peekTTL
}

func (p *peeks) drop(key string) {
	if _, ok := p.m.LoadAndDelete(key); ok {
		p.n.Add(-1)
	}
}

// headByPeek reads an object's metadata with a GET of its first bytes and
// keeps them when they are the whole object. ok is false when the store
// refused the range (an empty object): the caller HEADs instead.
func (b *Backend) headByPeek(ctx context.Context, bucket, key, full string) (storage.ObjectInfo, bool, error) {
	cctx, cancel := b.call(ctx)
	defer cancel()
	out, err := b.cli.GetObject(cctx, &s3.GetObjectInput{Bucket: &b.bucket, Key: &full, Range: aws.String(fmt.Sprintf("bytes=0-%d", peekSize-1))})
	if err != nil {
		err = mapErr(err)
		if errors.Is(err, storage.ErrInvalidRange) {
			return storage.ObjectInfo{}, false, nil
		}
		return storage.ObjectInfo{}, true, err
	}
	defer out.Body.Close()
	body, err := io.ReadAll(io.LimitReader(out.Body, peekSize+1))
	if err != nil {
		return storage.ObjectInfo{}, true, mapErr(err)
	}
	size := int64(len(body))
	if cr := aws.ToString(out.ContentRange); cr != "" {
		if i := strings.LastIndexByte(cr, '/'); i >= 0 {
			fmt.Sscan(cr[i+1:], &size)
		}
	}
	meta, err := b.decodeMeta(ctx, out.Metadata)
	if err != nil {
		return storage.ObjectInfo{}, true, err
	}
	info := storage.ObjectInfo{Bucket: bucket, Key: key, LastModified: aws.ToTime(out.LastModified), StoredSize: size, Meta: meta}
	if size == int64(len(body)) {
		b.peeks.put(full, &peeked{at: time.Now(), info: info, body: body})
	}
	return info, true, nil
}

// getPeeked answers a GetObject from a fresh peek.
func (b *Backend) getPeeked(full string, rng *storage.Range) (io.ReadCloser, storage.ObjectInfo, bool, error) {
	e, ok := b.peeks.take(full)
	if !ok {
		return nil, storage.ObjectInfo{}, false, nil
	}
	data := e.body
	if rng != nil {
		if rng.Start < 0 || rng.Length <= 0 || rng.Start >= int64(len(data)) {
			return nil, storage.ObjectInfo{}, true, storage.ErrInvalidRange
		}
		data = data[rng.Start:min(int64(len(data)), rng.Start+rng.Length)]
	}
	return io.NopCloser(bytes.NewReader(data)), e.info, true, nil
}
