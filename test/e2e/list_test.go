package e2e

import (
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
)

// putMany writes each key with its own name as content, 16 at a time.
func putMany(t *testing.T, c *s3.Client, bucket string, keys []string) {
	t.Helper()
	var wg sync.WaitGroup
	work := make(chan string)
	errs := make(chan error, len(keys))
	for range 16 {
		wg.Go(func() {
			for k := range work {
				_, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: aws.String(k), Body: strings.NewReader(k)})
				if err != nil {
					errs <- fmt.Errorf("PutObject %q: %w", k, err)
				}
			}
		})
	}
	for _, k := range keys {
		work <- k
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestListObjectsPaging(t *testing.T) {
	srv := startServer(t, t.TempDir())
	c := srv.createTenant(t, "alice")
	a := srv.sdk(c)
	ctx := ctxT(t)
	mkBucket(t, a, "many")

	// 2500 keys in nested "directories" plus a few at the top level.
	var keys []string
	for d := range 10 {
		for s := range 5 {
			for f := range 50 {
				keys = append(keys, fmt.Sprintf("dir%02d/sub%d/file%03d", d, s, f))
			}
		}
	}
	top := []string{"a-top", "top-1", "top-2", "zz-top"}
	keys = append(keys, top...)
	putMany(t, a, "many", keys)
	sorted := slices.Clone(keys)
	sort.Strings(sorted)

	// Plain paging, 100 per page, with continuation tokens.
	var got []string
	var token *string
	pages := 0
	for {
		out, err := a.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("many"), MaxKeys: aws.Int32(100), ContinuationToken: token})
		if err != nil {
			t.Fatalf("ListObjectsV2 page %d: %v", pages, err)
		}
		pages++
		if len(out.Contents) > 100 || aws.ToInt32(out.KeyCount) != int32(len(out.Contents)) {
			t.Errorf("page %d: %d objects, KeyCount %d; want <= 100 and equal", pages, len(out.Contents), aws.ToInt32(out.KeyCount))
		}
		for _, o := range out.Contents {
			got = append(got, aws.ToString(o.Key))
			if aws.ToInt64(o.Size) != int64(len(aws.ToString(o.Key))) || aws.ToString(o.ETag) != quotedETag([]byte(aws.ToString(o.Key))) {
				t.Errorf("listed %q: size %d etag %s; want %d %s", aws.ToString(o.Key), aws.ToInt64(o.Size), aws.ToString(o.ETag), len(aws.ToString(o.Key)), quotedETag([]byte(aws.ToString(o.Key))))
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			if out.NextContinuationToken != nil {
				t.Errorf("last page has NextContinuationToken %q", aws.ToString(out.NextContinuationToken))
			}
			break
		}
		if out.NextContinuationToken == nil {
			t.Fatalf("page %d truncated without NextContinuationToken", pages)
		}
		token = out.NextContinuationToken
		if pages > 100 {
			t.Fatal("more than 100 pages for 2504 keys")
		}
	}
	if !slices.Equal(got, sorted) {
		t.Fatalf("paged listing: %d keys; want all %d keys exactly once in order (first diff at %d)", len(got), len(sorted), firstDiff(got, sorted))
	}
	if pages != 26 {
		t.Errorf("paged listing took %d pages; want 26", pages)
	}

	// Delimiter at the top: ten common prefixes and the top-level keys, paged
	// by 3 so that prefixes and keys share pages.
	prefixes, contents := listDelim(t, a, "many", "", "/", 3)
	var wantPrefixes []string
	for d := range 10 {
		wantPrefixes = append(wantPrefixes, fmt.Sprintf("dir%02d/", d))
	}
	if !slices.Equal(prefixes, wantPrefixes) {
		t.Errorf("delimiter listing prefixes = %q; want %q", prefixes, wantPrefixes)
	}
	if !slices.Equal(contents, []string{"a-top", "top-1", "top-2", "zz-top"}) {
		t.Errorf("delimiter listing contents = %q; want top-level keys", contents)
	}

	prefixes, contents = listDelim(t, a, "many", "dir03/", "/", 2)
	if !slices.Equal(prefixes, []string{"dir03/sub0/", "dir03/sub1/", "dir03/sub2/", "dir03/sub3/", "dir03/sub4/"}) || len(contents) != 0 {
		t.Errorf("prefix dir03/ prefixes = %q, contents = %q", prefixes, contents)
	}
	prefixes, contents = listDelim(t, a, "many", "dir03/sub2/", "/", 7)
	if len(prefixes) != 0 || len(contents) != 50 || contents[0] != "dir03/sub2/file000" || contents[49] != "dir03/sub2/file049" {
		t.Errorf("prefix dir03/sub2/: %d prefixes, %d keys; want 0 and 50", len(prefixes), len(contents))
	}
	// A delimiter other than "/" and a prefix that is not a "directory".
	prefixes, _ = listDelim(t, a, "many", "dir0", "sub", 1000)
	if len(prefixes) != 10 || prefixes[0] != "dir00/sub" {
		t.Errorf("prefix dir0 delimiter sub: prefixes %q; want dir00/sub .. dir09/sub", prefixes)
	}

	// start-after.
	out, err := a.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("many"), StartAfter: aws.String("dir05/sub3/file049"), MaxKeys: aws.Int32(3)})
	if err != nil {
		t.Fatal(err)
	}
	var sa []string
	for _, o := range out.Contents {
		sa = append(sa, aws.ToString(o.Key))
	}
	if !slices.Equal(sa, []string{"dir05/sub4/file000", "dir05/sub4/file001", "dir05/sub4/file002"}) {
		t.Errorf("start-after listing = %q", sa)
	}
	out, err = a.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("many"), StartAfter: aws.String("zz-top")})
	if err != nil || len(out.Contents) != 0 || aws.ToBool(out.IsTruncated) {
		t.Errorf("start-after last key: %v, %d keys; want none", err, len(out.Contents))
	}
	// max-keys=0 returns nothing, not an error.
	out, err = a.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("many"), MaxKeys: aws.Int32(0)})
	if err != nil || len(out.Contents) != 0 {
		t.Errorf("max-keys=0: %v, %d keys; want none", err, len(out.Contents))
	}

	// The SDK paginator and minio-go's recursive listing see everything.
	if all := listAll(t, a, "many", "dir07/"); len(all) != 250 {
		t.Errorf("paginator under dir07/: %d keys; want 250", len(all))
	}
	mc := srv.minio(t, c)
	var mkeys []string
	for o := range mc.ListObjects(ctx, "many", minio.ListObjectsOptions{Recursive: true, MaxKeys: 333}) {
		if o.Err != nil {
			t.Fatalf("minio ListObjects: %v", o.Err)
		}
		mkeys = append(mkeys, o.Key)
	}
	if !slices.Equal(mkeys, sorted) {
		t.Errorf("minio recursive listing: %d keys; want %d in order", len(mkeys), len(sorted))
	}

	// ListObjects v1 with markers, without and with a delimiter.
	var v1 []string
	marker := ""
	for i := 0; ; i++ {
		out, err := a.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String("many"), Marker: aws.String(marker), MaxKeys: aws.Int32(250)})
		if err != nil {
			t.Fatalf("ListObjects v1: %v", err)
		}
		for _, o := range out.Contents {
			v1 = append(v1, aws.ToString(o.Key))
		}
		if !aws.ToBool(out.IsTruncated) || i > 50 {
			break
		}
		marker = aws.ToString(out.Contents[len(out.Contents)-1].Key)
		if out.NextMarker != nil && aws.ToString(out.NextMarker) != marker {
			t.Errorf("v1 NextMarker %q; want last key %q", aws.ToString(out.NextMarker), marker)
		}
	}
	if !slices.Equal(v1, sorted) {
		t.Errorf("ListObjects v1 with marker: %d keys; want %d in order (first diff at %d)", len(v1), len(sorted), firstDiff(v1, sorted))
	}
	var v1p []string
	marker = ""
	for i := 0; ; i++ {
		out, err := a.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String("many"), Delimiter: aws.String("/"), Marker: aws.String(marker), MaxKeys: aws.Int32(4)})
		if err != nil {
			t.Fatalf("ListObjects v1 delimiter: %v", err)
		}
		for _, p := range out.CommonPrefixes {
			v1p = append(v1p, aws.ToString(p.Prefix))
		}
		for _, o := range out.Contents {
			v1p = append(v1p, aws.ToString(o.Key))
		}
		if !aws.ToBool(out.IsTruncated) || i > 20 {
			break
		}
		if out.NextMarker == nil {
			t.Fatal("v1 truncated delimiter listing without NextMarker")
		}
		marker = aws.ToString(out.NextMarker)
	}
	sort.Strings(v1p)
	want := append(slices.Clone(wantPrefixes), top...)
	sort.Strings(want)
	if !slices.Equal(v1p, want) {
		t.Errorf("ListObjects v1 with delimiter and NextMarker = %q; want %q", v1p, want)
	}
}

// listDelim pages through a delimiter listing, asserting nothing repeats.
func listDelim(t *testing.T, c *s3.Client, bucket, prefix, delim string, pageSize int32) (prefixes, keys []string) {
	t.Helper()
	seen := map[string]bool{}
	var token *string
	for i := 0; ; i++ {
		out, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{
			Bucket: aws.String(bucket), Prefix: aws.String(prefix), Delimiter: aws.String(delim),
			MaxKeys: aws.Int32(pageSize), ContinuationToken: token,
		})
		if err != nil {
			t.Fatalf("ListObjectsV2 prefix=%q delimiter=%q: %v", prefix, delim, err)
		}
		if n := len(out.Contents) + len(out.CommonPrefixes); n > int(pageSize) {
			t.Errorf("page has %d entries; max-keys %d", n, pageSize)
		}
		for _, p := range out.CommonPrefixes {
			pp := aws.ToString(p.Prefix)
			if seen["p:"+pp] {
				t.Errorf("prefix %q listed twice", pp)
			}
			seen["p:"+pp] = true
			prefixes = append(prefixes, pp)
		}
		for _, o := range out.Contents {
			k := aws.ToString(o.Key)
			if seen["k:"+k] {
				t.Errorf("key %q listed twice", k)
			}
			seen["k:"+k] = true
			keys = append(keys, k)
		}
		if !aws.ToBool(out.IsTruncated) {
			return prefixes, keys
		}
		if i > 10000/int(pageSize)+10 {
			t.Fatal("listing does not end")
		}
		token = out.NextContinuationToken
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestListEncodingTypeURL(t *testing.T) {
	srv := startServer(t, t.TempDir())
	c := srv.createTenant(t, "alice")
	a := srv.sdk(c)
	mkBucket(t, a, "enc")
	keys := []string{"sp ace/one", "ünï©ødé/日本語", "plus+sign", "amp&lt<gt>", "percent%41", "tab\there", "ctrl\x01char"}
	for _, k := range keys {
		putBytes(t, a, "enc", k, []byte(k))
	}

	// Raw request, so the client decodes nothing for us.
	for _, q := range []string{"list-type=2&encoding-type=url", "encoding-type=url", "list-type=2&encoding-type=url&delimiter=%2F"} {
		st, code, body := srv.doRaw(t, c, http.MethodGet, "/enc?"+q, nil, nil)
		if st != http.StatusOK {
			t.Fatalf("GET ?%s: %d %s %s", q, st, code, truncate(body, 300))
		}
		var res struct {
			EncodingType string   `xml:"EncodingType"`
			Keys         []string `xml:"Contents>Key"`
			Prefixes     []string `xml:"CommonPrefixes>Prefix"`
			Delimiter    string   `xml:"Delimiter"`
		}
		if err := xml.Unmarshal(body, &res); err != nil {
			t.Fatalf("?%s: %v\n%s", q, err, body)
		}
		if res.EncodingType != "url" {
			t.Errorf("?%s: EncodingType = %q; want url", q, res.EncodingType)
		}
		var decoded []string
		for _, k := range append(res.Keys, res.Prefixes...) {
			if strings.ContainsAny(k, " \t\x01&<>") || strings.ContainsFunc(k, func(r rune) bool { return r > 127 }) {
				t.Errorf("?%s: key %q is not URL-encoded", q, k)
			}
			d, err := url.QueryUnescape(k)
			if err != nil {
				t.Errorf("?%s: key %q does not decode: %v", q, k, err)
			}
			decoded = append(decoded, d)
		}
		want := keys
		if strings.Contains(q, "delimiter") {
			want = []string{"sp ace/", "ünï©ødé/", "plus+sign", "amp&lt<gt>", "percent%41", "tab\there", "ctrl\x01char"}
			if res.Delimiter != "%2F" && res.Delimiter != "/" {
				t.Errorf("?%s: Delimiter = %q; want %%2F", q, res.Delimiter)
			}
		}
		if !sameSet(decoded, want) {
			t.Errorf("?%s: decoded entries %q; want %q", q, decoded, want)
		}
	}

	// minio-go asks for encoding-type=url and decodes; keys must come back exact.
	var mkeys []string
	for o := range srv.minio(t, c).ListObjects(ctxT(t), "enc", minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		mkeys = append(mkeys, o.Key)
	}
	if !sameSet(mkeys, keys) {
		t.Errorf("minio listing %q; want %q", mkeys, keys)
	}
	// The SDK with EncodingType=url returns encoded keys; decode like a client.
	out, err := a.ListObjectsV2(ctxT(t), &s3.ListObjectsV2Input{Bucket: aws.String("enc"), EncodingType: types.EncodingTypeUrl})
	if err != nil {
		t.Fatal(err)
	}
	var sk []string
	for _, o := range out.Contents {
		d, err := url.QueryUnescape(aws.ToString(o.Key))
		if err != nil {
			t.Errorf("SDK listing key %q: %v", aws.ToString(o.Key), err)
		}
		sk = append(sk, d)
	}
	if !sameSet(sk, keys) {
		t.Errorf("SDK encoded listing decodes to %q; want %q", sk, keys)
	}
}
