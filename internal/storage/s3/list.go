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
	// group is the common prefix the marker falls strictly inside, if any:
	// it is still due when a key of it sorts after the marker, but a
	// backend listing from the marker may not say so, so ask separately.
	group := ""
	if opts.Marker != "" {
		after := opts.Marker
		if g := commonPrefix(after, opts.Prefix, opts.Delimiter); g != "" {
			// Everything under g is one entry: resume past all of it.
			after = g + string(utf8.MaxRune)
			if g != opts.Marker {
				has, err := b.anyAfter(ctx, base+g, base+opts.Marker)
				if err != nil {
					return storage.ListResult{}, err
				}
				if has {
					group = g
				}
			}
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
	if group != "" {
		res.CommonPrefixes = append(res.CommonPrefixes, group)
	}
	for _, cp := range out.CommonPrefixes {
		res.CommonPrefixes = append(res.CommonPrefixes, strings.TrimPrefix(aws.ToString(cp.Prefix), base))
	}
	contents := out.Contents
	// The group took one slot: drop the greatest entry beyond max.
	trimmed := len(contents)+len(res.CommonPrefixes) > max
	if trimmed {
		res.IsTruncated = true
		nc, np := len(contents), len(res.CommonPrefixes)
		if np > 0 && (nc == 0 || res.CommonPrefixes[np-1] > strings.TrimPrefix(aws.ToString(contents[nc-1].Key), base)) {
			res.CommonPrefixes = res.CommonPrefixes[:np-1]
		} else {
			contents = contents[:nc-1]
		}
	}
	res.Objects = make([]storage.ObjectInfo, len(contents))
	errs := make([]error, len(contents))
	sem := make(chan struct{}, headParallel)
	var wg sync.WaitGroup
	for i, o := range contents {
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
		// Some servers (versitygw) report truncation on a page that ends
		// exactly at the last key; a client would then fetch an empty page.
		if !trimmed {
			after := last
			if commonPrefix(last, opts.Prefix, opts.Delimiter) == last {
				after += string(utf8.MaxRune)
			}
			more, err := b.anyAfter(ctx, base+opts.Prefix, base+after)
			if err != nil {
				return storage.ListResult{}, err
			}
			if !more {
				res.IsTruncated, res.NextMarker = false, ""
			}
		}
	}
	return res, nil
}

// commonPrefix returns the common prefix key falls into in a listing of
// prefix rolled up at delim ("" when it is not rolled up).
func commonPrefix(key, prefix, delim string) string {
	if delim == "" || !strings.HasPrefix(key, prefix) {
		return ""
	}
	i := strings.Index(key[len(prefix):], delim)
	if i < 0 {
		return ""
	}
	return key[:len(prefix)+i+len(delim)]
}

// anyAfter reports whether a backend key under prefix sorts after start.
func (b *Backend) anyAfter(ctx context.Context, prefix, start string) (bool, error) {
	cctx, cancel := b.call(ctx)
	defer cancel()
	out, err := b.cli.ListObjectsV2(cctx, &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: &prefix, StartAfter: &start, MaxKeys: aws.Int32(1)})
	if err != nil {
		return false, mapErr(err)
	}
	return len(out.Contents) > 0, nil
}
