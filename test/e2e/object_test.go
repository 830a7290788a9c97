package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmw "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/minio/minio-go/v7"
)

func rawStatus(md middleware.Metadata) int {
	if r, ok := awsmw.GetRawResponse(md).(*smithyhttp.Response); ok {
		return r.StatusCode
	}
	return 0
}

func TestObjectPutGetHeadDelete(t *testing.T) {
	srv := startServer(t, t.TempDir())
	c := srv.createTenant(t, "alice")
	a := srv.sdk(c)
	ctx := ctxT(t)
	mkBucket(t, a, "objs")

	body := pattern("crud", 100_000)
	put, err := a.PutObject(ctx, &s3.PutObjectInput{
		Bucket:             aws.String("objs"),
		Key:                aws.String("dir/file.bin"),
		Body:               bytes.NewReader(body),
		ContentType:        aws.String("application/x-facet-test"),
		ContentEncoding:    aws.String("deflate"),
		ContentDisposition: aws.String(`attachment; filename="a b.bin"`),
		CacheControl:       aws.String("max-age=60, private"),
		ContentLanguage:    aws.String("en-GB"),
		Metadata:           map[string]string{"color": "blue", "multi-word-name": "Value With Spaces"},
	})
	if err != nil {
		t.Fatalf("PutObject: %v", err)
	}
	if got := aws.ToString(put.ETag); got != quotedETag(body) {
		t.Errorf("PutObject ETag = %s; want %s", got, quotedETag(body))
	}

	check := func(what string, etag, ctype, cenc, cdisp, cctl, clang *string, length *int64, meta map[string]string, lm *time.Time) {
		t.Helper()
		want := map[string]string{
			"ETag": quotedETag(body), "Content-Type": "application/x-facet-test", "Content-Encoding": "deflate",
			"Content-Disposition": `attachment; filename="a b.bin"`, "Cache-Control": "max-age=60, private",
			"Content-Language": "en-GB",
		}
		got := map[string]string{
			"ETag": aws.ToString(etag), "Content-Type": aws.ToString(ctype), "Content-Encoding": aws.ToString(cenc),
			"Content-Disposition": aws.ToString(cdisp), "Cache-Control": aws.ToString(cctl), "Content-Language": aws.ToString(clang),
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %q; want %q", what, k, got[k], v)
			}
		}
		if aws.ToInt64(length) != int64(len(body)) {
			t.Errorf("%s: Content-Length = %d; want %d", what, aws.ToInt64(length), len(body))
		}
		if meta["color"] != "blue" || meta["multi-word-name"] != "Value With Spaces" || len(meta) != 2 {
			t.Errorf("%s: metadata = %v; want color=blue, multi-word-name=Value With Spaces", what, meta)
		}
		if lm == nil || time.Since(*lm) > time.Hour || time.Until(*lm) > time.Hour {
			t.Errorf("%s: Last-Modified = %v; want about now", what, lm)
		}
	}

	got, out := getBytes(t, a, "objs", "dir/file.bin")
	if !bytes.Equal(got, body) {
		t.Errorf("GetObject body differs (%d bytes, want %d)", len(got), len(body))
	}
	check("GetObject", out.ETag, out.ContentType, out.ContentEncoding, out.ContentDisposition, out.CacheControl, out.ContentLanguage, out.ContentLength, out.Metadata, out.LastModified)

	head, err := a.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("objs"), Key: aws.String("dir/file.bin")})
	if err != nil {
		t.Fatalf("HeadObject: %v", err)
	}
	check("HeadObject", head.ETag, head.ContentType, head.ContentEncoding, head.ContentDisposition, head.CacheControl, head.ContentLanguage, head.ContentLength, head.Metadata, head.LastModified)

	// The same object through minio-go.
	mc := srv.minio(t, c)
	mo, err := mc.GetObject(ctx, "objs", "dir/file.bin", minio.GetObjectOptions{})
	if err != nil {
		t.Fatalf("minio GetObject: %v", err)
	}
	mb, err := io.ReadAll(mo)
	if err != nil || !bytes.Equal(mb, body) {
		t.Errorf("minio GetObject: %d bytes, err %v; want %d bytes", len(mb), err, len(body))
	}
	st, err := mo.Stat()
	if err != nil {
		t.Errorf("minio Stat: %v", err)
	} else if st.UserMetadata["Color"] != "blue" {
		t.Errorf("minio user metadata = %v; want Color=blue", st.UserMetadata)
	}
	mo.Close()

	// Overwrite replaces content and metadata entirely.
	body2 := []byte("second version")
	if _, err := a.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("objs"), Key: aws.String("dir/file.bin"), Body: bytes.NewReader(body2)}); err != nil {
		t.Fatalf("PutObject overwrite: %v", err)
	}
	got, out = getBytes(t, a, "objs", "dir/file.bin")
	if !bytes.Equal(got, body2) || len(out.Metadata) != 0 || aws.ToString(out.ContentEncoding) != "" {
		t.Errorf("after overwrite: body %q, metadata %v, encoding %q; want %q, none, none", got, out.Metadata, aws.ToString(out.ContentEncoding), body2)
	}

	// Empty object.
	putBytes(t, a, "objs", "empty", nil)
	assertContent(t, a, "objs", "empty", []byte{})

	// Deletion, including of a key that does not exist (204 either way).
	for _, k := range []string{"dir/file.bin", "never-existed"} {
		if _, err := a.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("objs"), Key: aws.String(k)}); err != nil {
			t.Errorf("DeleteObject %s: %v", k, err)
		}
	}
	_, err = a.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("objs"), Key: aws.String("dir/file.bin")})
	wantErr(t, "GetObject deleted", err, "NoSuchKey", http.StatusNotFound)
	assertAbsent(t, a, "objs", "dir/file.bin")
	_, err = a.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("no-such-bucket"), Key: aws.String("k")})
	wantErr(t, "GetObject missing bucket", err, "NoSuchBucket", http.StatusNotFound)
	_, err = a.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("no-such-bucket"), Key: aws.String("k"), Body: strings.NewReader("x")})
	wantErr(t, "PutObject missing bucket", err, "NoSuchBucket", http.StatusNotFound)
}

func TestRangeGets(t *testing.T) {
	srv := startServer(t, t.TempDir())
	c := srv.createTenant(t, "alice")
	a := srv.sdk(c)
	ctx := ctxT(t)
	mkBucket(t, a, "ranges")
	body := pattern("range", 100)
	putBytes(t, a, "ranges", "obj", body)

	cases := []struct {
		rng      string
		from, to int // inclusive
	}{
		{"bytes=0-9", 0, 9},
		{"bytes=10-10", 10, 10},
		{"bytes=-10", 90, 99},
		{"bytes=5-", 5, 99},
		{"bytes=90-200", 90, 99},
		{"bytes=-500", 0, 99},
		{"bytes=0-", 0, 99},
	}
	for _, tc := range cases {
		out, err := a.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("ranges"), Key: aws.String("obj"), Range: aws.String(tc.rng)})
		if err != nil {
			t.Errorf("GetObject Range %s: %v", tc.rng, err)
			continue
		}
		got, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if want := body[tc.from : tc.to+1]; !bytes.Equal(got, want) {
			t.Errorf("Range %s: got %d bytes %x; want %d bytes %x", tc.rng, len(got), got, len(want), want)
		}
		if want := fmt.Sprintf("bytes %d-%d/100", tc.from, tc.to); aws.ToString(out.ContentRange) != want {
			t.Errorf("Range %s: Content-Range %q; want %q", tc.rng, aws.ToString(out.ContentRange), want)
		}
		if st := rawStatus(out.ResultMetadata); st != http.StatusPartialContent {
			t.Errorf("Range %s: status %d; want 206", tc.rng, st)
		}
		if aws.ToInt64(out.ContentLength) != int64(tc.to-tc.from+1) {
			t.Errorf("Range %s: Content-Length %d; want %d", tc.rng, aws.ToInt64(out.ContentLength), tc.to-tc.from+1)
		}
	}
	for _, rng := range []string{"bytes=100-", "bytes=200-300", "bytes=100-100"} {
		_, err := a.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("ranges"), Key: aws.String("obj"), Range: aws.String(rng)})
		wantErr(t, "GetObject Range "+rng, err, "InvalidRange", http.StatusRequestedRangeNotSatisfiable)
	}

	// minio-go's range API.
	mc := srv.minio(t, c)
	opts := minio.GetObjectOptions{}
	if err := opts.SetRange(20, 29); err != nil {
		t.Fatal(err)
	}
	mo, err := mc.GetObject(ctx, "ranges", "obj", opts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(mo)
	mo.Close()
	if err != nil || !bytes.Equal(got, body[20:30]) {
		t.Errorf("minio range 20-29: %x, %v; want %x", got, err, body[20:30])
	}
}

func TestConditionalGets(t *testing.T) {
	srv := startServer(t, t.TempDir())
	a := srv.sdk(srv.createTenant(t, "alice"))
	ctx := ctxT(t)
	mkBucket(t, a, "cond")
	body := []byte("conditional body")
	etag := putBytes(t, a, "cond", "obj", body)
	head, err := a.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("cond"), Key: aws.String("obj")})
	if err != nil {
		t.Fatal(err)
	}
	lm := *head.LastModified
	past, future := lm.Add(-time.Hour), lm.Add(time.Hour)
	get := func(in s3.GetObjectInput) error {
		in.Bucket, in.Key = aws.String("cond"), aws.String("obj")
		out, err := a.GetObject(ctx, &in)
		if err == nil {
			b, _ := io.ReadAll(out.Body)
			out.Body.Close()
			if !bytes.Equal(b, body) {
				return fmt.Errorf("body %q; want %q", b, body)
			}
		}
		return err
	}
	ok := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v; want 200", what, err)
		}
	}
	ok("If-Match current", get(s3.GetObjectInput{IfMatch: aws.String(etag)}))
	ok("If-Match *", get(s3.GetObjectInput{IfMatch: aws.String("*")}))
	wantErr(t, "If-Match other", get(s3.GetObjectInput{IfMatch: aws.String(`"0123456789abcdef0123456789abcdef"`)}), "PreconditionFailed", http.StatusPreconditionFailed)
	wantErr(t, "If-None-Match current", get(s3.GetObjectInput{IfNoneMatch: aws.String(etag)}), "", http.StatusNotModified)
	ok("If-None-Match other", get(s3.GetObjectInput{IfNoneMatch: aws.String(`"0123456789abcdef0123456789abcdef"`)}))
	wantErr(t, "If-Modified-Since future", get(s3.GetObjectInput{IfModifiedSince: &future}), "", http.StatusNotModified)
	ok("If-Modified-Since past", get(s3.GetObjectInput{IfModifiedSince: &past}))
	wantErr(t, "If-Unmodified-Since past", get(s3.GetObjectInput{IfUnmodifiedSince: &past}), "PreconditionFailed", http.StatusPreconditionFailed)
	ok("If-Unmodified-Since future", get(s3.GetObjectInput{IfUnmodifiedSince: &future}))
	// RFC 7232 precedence as S3 applies it: a matching If-Match wins over a
	// failing If-Unmodified-Since; a failing If-None-Match gives 304 even when
	// If-Modified-Since would pass.
	ok("If-Match ok + If-Unmodified-Since past", get(s3.GetObjectInput{IfMatch: aws.String(etag), IfUnmodifiedSince: &past}))
	wantErr(t, "If-None-Match current + If-Modified-Since past", get(s3.GetObjectInput{IfNoneMatch: aws.String(etag), IfModifiedSince: &past}), "", http.StatusNotModified)

	_, err = a.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("cond"), Key: aws.String("obj"), IfMatch: aws.String(`"00"`)})
	wantErr(t, "HeadObject If-Match other", err, "", http.StatusPreconditionFailed)
	_, err = a.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("cond"), Key: aws.String("obj"), IfNoneMatch: aws.String(etag)})
	wantErr(t, "HeadObject If-None-Match current", err, "", http.StatusNotModified)
}

func TestResponseOverrides(t *testing.T) {
	srv := startServer(t, t.TempDir())
	c := srv.createTenant(t, "alice")
	a := srv.sdk(c)
	ctx := ctxT(t)
	mkBucket(t, a, "overrides")
	if _, err := a.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String("overrides"), Key: aws.String("doc"), Body: strings.NewReader("hello"),
		ContentType: aws.String("text/plain"),
	}); err != nil {
		t.Fatal(err)
	}
	in := &s3.GetObjectInput{
		Bucket: aws.String("overrides"), Key: aws.String("doc"),
		ResponseContentType:        aws.String("application/x-override"),
		ResponseContentDisposition: aws.String(`attachment; filename="x.txt"`),
		ResponseCacheControl:       aws.String("no-store"),
		ResponseContentLanguage:    aws.String("fr"),
		ResponseContentEncoding:    aws.String("identity"),
		ResponseExpires:            aws.Time(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)),
	}
	out, err := a.GetObject(ctx, in)
	if err != nil {
		t.Fatalf("GetObject with response-* query: %v", err)
	}
	out.Body.Close()
	want := map[string]string{"Content-Type": "application/x-override", "Content-Disposition": `attachment; filename="x.txt"`,
		"Cache-Control": "no-store", "Content-Language": "fr", "Content-Encoding": "identity"}
	gotHdr := map[string]string{"Content-Type": aws.ToString(out.ContentType), "Content-Disposition": aws.ToString(out.ContentDisposition),
		"Cache-Control": aws.ToString(out.CacheControl), "Content-Language": aws.ToString(out.ContentLanguage), "Content-Encoding": aws.ToString(out.ContentEncoding)}
	for k, v := range want {
		if gotHdr[k] != v {
			t.Errorf("query override: %s = %q; want %q", k, gotHdr[k], v)
		}
	}

	// The same through a presigned URL fetched by a plain HTTP client.
	pre, err := s3.NewPresignClient(a).PresignGetObject(ctx, in, s3.WithPresignExpires(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(pre.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "hello" {
		t.Fatalf("presigned GET: %d %q; want 200 hello", resp.StatusCode, b)
	}
	for k, v := range want {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("presigned override: %s = %q; want %q", k, got, v)
		}
	}
	if got := resp.Header.Get("Expires"); got != "Wed, 02 Jan 2030 03:04:05 GMT" {
		t.Errorf("presigned override: Expires = %q; want Wed, 02 Jan 2030 03:04:05 GMT", got)
	}

	// Without overrides, the stored type comes back.
	_, out2 := getBytes(t, a, "overrides", "doc")
	if aws.ToString(out2.ContentType) != "text/plain" {
		t.Errorf("stored Content-Type = %q; want text/plain", aws.ToString(out2.ContentType))
	}
}

func TestCopyObject(t *testing.T) {
	srv := startServer(t, t.TempDir())
	c := srv.createTenant(t, "alice")
	a := srv.sdk(c)
	ctx := ctxT(t)
	mkBucket(t, a, "src")
	mkBucket(t, a, "dst")
	body := pattern("copy", 300_000)
	srcKey := "dir/sp ace/ünï+code?.bin"
	if _, err := a.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String("src"), Key: aws.String(srcKey), Body: bytes.NewReader(body),
		ContentType: aws.String("application/x-src"), Metadata: map[string]string{"origin": "source"},
	}); err != nil {
		t.Fatal(err)
	}
	copySource := "src/" + urlPathEscape(srcKey)

	// COPY (the default) keeps metadata and content type.
	cp, err := a.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dst"), Key: aws.String("copied"), CopySource: aws.String(copySource)})
	if err != nil {
		t.Fatalf("CopyObject COPY: %v", err)
	}
	if cp.CopyObjectResult == nil || aws.ToString(cp.CopyObjectResult.ETag) != quotedETag(body) {
		t.Errorf("CopyObject ETag = %v; want %s", cp.CopyObjectResult, quotedETag(body))
	}
	got, out := getBytes(t, a, "dst", "copied")
	if !bytes.Equal(got, body) || out.Metadata["origin"] != "source" || aws.ToString(out.ContentType) != "application/x-src" {
		t.Errorf("COPY result: %d bytes, metadata %v, type %q; want same as source", len(got), out.Metadata, aws.ToString(out.ContentType))
	}

	// REPLACE takes the request's metadata only.
	if _, err := a.CopyObject(ctx, &s3.CopyObjectInput{
		Bucket: aws.String("dst"), Key: aws.String("replaced"), CopySource: aws.String(copySource),
		MetadataDirective: types.MetadataDirectiveReplace, ContentType: aws.String("text/x-new"),
		Metadata: map[string]string{"fresh": "yes"},
	}); err != nil {
		t.Fatalf("CopyObject REPLACE: %v", err)
	}
	got, out = getBytes(t, a, "dst", "replaced")
	if !bytes.Equal(got, body) || len(out.Metadata) != 1 || out.Metadata["fresh"] != "yes" || aws.ToString(out.ContentType) != "text/x-new" {
		t.Errorf("REPLACE result: %d bytes, metadata %v, type %q; want metadata {fresh:yes}, type text/x-new", len(got), out.Metadata, aws.ToString(out.ContentType))
	}

	// Copy onto itself with REPLACE updates metadata in place.
	if _, err := a.CopyObject(ctx, &s3.CopyObjectInput{
		Bucket: aws.String("src"), Key: aws.String(srcKey), CopySource: aws.String(copySource),
		MetadataDirective: types.MetadataDirectiveReplace, Metadata: map[string]string{"origin": "rewritten"},
	}); err != nil {
		t.Fatalf("CopyObject self REPLACE: %v", err)
	}
	got, out = getBytes(t, a, "src", srcKey)
	if !bytes.Equal(got, body) || out.Metadata["origin"] != "rewritten" {
		t.Errorf("self copy: %d bytes, metadata %v; want content kept, origin=rewritten", len(got), out.Metadata)
	}
	// Copy onto itself without changing anything is an error in S3.
	_, err = a.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("src"), Key: aws.String(srcKey), CopySource: aws.String(copySource)})
	wantErr(t, "CopyObject self COPY", err, "InvalidRequest", http.StatusBadRequest)

	// Conditional copy and missing sources.
	_, err = a.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dst"), Key: aws.String("cond"), CopySource: aws.String(copySource), CopySourceIfMatch: aws.String(`"00000000000000000000000000000000"`)})
	wantErr(t, "CopyObject x-amz-copy-source-if-match other", err, "PreconditionFailed", http.StatusPreconditionFailed)
	assertAbsent(t, a, "dst", "cond")
	_, err = a.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dst"), Key: aws.String("x"), CopySource: aws.String("src/missing")})
	wantErr(t, "CopyObject missing key", err, "NoSuchKey", http.StatusNotFound)
	_, err = a.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dst"), Key: aws.String("x"), CopySource: aws.String("nobucket/k")})
	wantErr(t, "CopyObject missing bucket", err, "NoSuchBucket", http.StatusNotFound)
	assertAbsent(t, a, "dst", "x")

	// minio-go's server-side copy.
	mc := srv.minio(t, c)
	if _, err := mc.CopyObject(ctx, minio.CopyDestOptions{Bucket: "dst", Object: "minio-copy"}, minio.CopySrcOptions{Bucket: "src", Object: srcKey}); err != nil {
		t.Fatalf("minio CopyObject: %v", err)
	}
	assertContent(t, a, "dst", "minio-copy", body)
}

func TestDeleteObjects(t *testing.T) {
	srv := startServer(t, t.TempDir())
	a := srv.sdk(srv.createTenant(t, "alice"))
	ctx := ctxT(t)
	mkBucket(t, a, "multi")
	keys := []string{"a", "b/c", "d e", "ünï", "keep1", "keep2", "q1", "q2"}
	for _, k := range keys {
		putBytes(t, a, "multi", k, []byte(k))
	}
	objs := func(ks ...string) []types.ObjectIdentifier {
		var ids []types.ObjectIdentifier
		for _, k := range ks {
			ids = append(ids, types.ObjectIdentifier{Key: aws.String(k)})
		}
		return ids
	}
	out, err := a.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("multi"), Delete: &types.Delete{Objects: objs("a", "b/c", "d e", "ünï", "never-existed")}})
	if err != nil {
		t.Fatalf("DeleteObjects: %v", err)
	}
	var deleted []string
	for _, d := range out.Deleted {
		deleted = append(deleted, aws.ToString(d.Key))
	}
	if len(out.Errors) != 0 {
		t.Errorf("DeleteObjects errors: %+v", out.Errors)
	}
	if !sameSet(deleted, []string{"a", "b/c", "d e", "ünï", "never-existed"}) {
		t.Errorf("DeleteObjects Deleted = %q; want all five keys (a missing key counts as deleted)", deleted)
	}
	out, err = a.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("multi"), Delete: &types.Delete{Objects: objs("q1", "q2"), Quiet: aws.Bool(true)}})
	if err != nil {
		t.Fatalf("DeleteObjects quiet: %v", err)
	}
	if len(out.Deleted) != 0 || len(out.Errors) != 0 {
		t.Errorf("quiet DeleteObjects reported Deleted=%d Errors=%d; want 0 and 0", len(out.Deleted), len(out.Errors))
	}
	if got := listAll(t, a, "multi", ""); !sameSet(got, []string{"keep1", "keep2"}) {
		t.Errorf("after DeleteObjects, listing = %q; want [keep1 keep2]", got)
	}
	_, err = a.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("no-such-bucket"), Delete: &types.Delete{Objects: objs("a")}})
	wantErr(t, "DeleteObjects missing bucket", err, "NoSuchBucket", http.StatusNotFound)
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}

// listAll lists every key under prefix with ListObjectsV2 and no delimiter.
func listAll(t *testing.T, c *s3.Client, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("ListObjectsV2 %s: %v", bucket, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}
