package s3

import (
	"context"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/facet-sds/facet/internal/storage"
)

// headParallel bounds the HEADs a listing issues for Facet metadata, which
// ListObjectsV2 does not return.
const headParallel = 8

// ListObjects maps onto ListObjectsV2 under the bucket's prefix, then reads
// each listed object's Facet metadata.
func (b *Backend) ListObjects(ctx context.Context, bucket string, opts storage.ListOptions) (storage.ListResult, error) {
	if err := b.needBucket(ctx, bucket); err != nil {
		return storage.ListResult{}, err
	}
	base := b.root + bucket + "/"
	max := opts.MaxKeys
	if max <= 0 || max > 1000 {
		max = 1000
	}
	in := &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: aws.String(base + opts.Prefix), MaxKeys: aws.Int32(int32(max))}
	if opts.Delimiter != "" {
		in.Delimiter = aws.String(opts.Delimiter)
	}
	if opts.Marker != "" {
		after := opts.Marker
		// A common prefix as marker means "after everything under it".
		if opts.Delimiter != "" && strings.HasSuffix(after, opts.Delimiter) && strings.HasPrefix(after, opts.Prefix) {
			after += string(utf8.MaxRune)
		}
		in.StartAfter = aws.String(base + after)
	}
	cctx, cancel := b.call(ctx)
	out, err := b.cli.ListObjectsV2(cctx, in)
	cancel()
	if err != nil {
		return storage.ListResult{}, mapErr(err)
	}
	res := storage.ListResult{IsTruncated: aws.ToBool(out.IsTruncated)}
	for _, cp := range out.CommonPrefixes {
		res.CommonPrefixes = append(res.CommonPrefixes, strings.TrimPrefix(aws.ToString(cp.Prefix), base))
	}
	res.Objects = make([]storage.ObjectInfo, len(out.Contents))
	errs := make([]error, len(out.Contents))
	sem := make(chan struct{}, headParallel)
	var wg sync.WaitGroup
	for i, o := range out.Contents {
		key := strings.TrimPrefix(aws.ToString(o.Key), base)
		res.Objects[i] = storage.ObjectInfo{Bucket: bucket, Key: key, LastModified: aws.ToTime(o.LastModified), StoredSize: aws.ToInt64(o.Size)}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			info, err := b.HeadObject(ctx, bucket, key)
			if err == nil {
				res.Objects[i].Meta = info.Meta
			} else if !isNotFound(err) {
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return storage.ListResult{}, err
		}
	}
	if res.IsTruncated {
		last := ""
		if n := len(res.Objects); n > 0 {
			last = res.Objects[n-1].Key
		}
		if n := len(res.CommonPrefixes); n > 0 && res.CommonPrefixes[n-1] > last {
			last = res.CommonPrefixes[n-1]
		}
		res.NextMarker = last
	}
	return res, nil
}
