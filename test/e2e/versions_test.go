package e2e

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestDeleteBucketWithUploads: a bucket whose only content is open
// multipart uploads is deleted and its uploads aborted, as AWS does;
// objects still keep a bucket.
func TestDeleteBucketWithUploads(t *testing.T) {
	srv := startServer(t, t.TempDir())
	a := srv.sdk(srv.createTenant(t, "alice"))
	ctx := ctxT(t)
	bk := aws.String("uploads")
	mkBucket(t, a, "uploads")
	putBytes(t, a, "uploads", "obj", []byte("x"))
	var ids []*string
	for _, key := range []string{"mp", "dir/mp"} {
		mp, err := a.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: bk, Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, mp.UploadId)
	}
	if _, err := a.UploadPart(ctx, &s3.UploadPartInput{Bucket: bk, Key: aws.String("mp"), UploadId: ids[0],
		PartNumber: aws.Int32(1), Body: strings.NewReader("part one")}); err != nil {
		t.Fatal(err)
	}

	_, err := a.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: bk})
	wantErr(t, "DeleteBucket with an object and uploads", err, "BucketNotEmpty", http.StatusConflict)
	lu, err := a.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: bk})
	if err != nil || len(lu.Uploads) != 2 {
		t.Fatalf("uploads after the refused DeleteBucket: %d, %v; want both", len(lu.Uploads), err)
	}

	if _, err := a.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bk, Key: aws.String("obj")}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: bk}); err != nil {
		t.Fatalf("DeleteBucket with only uploads: %v", err)
	}
	_, err = a.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: bk})
	wantErr(t, "HeadBucket after delete", err, "", http.StatusNotFound)

	// The name made again starts with no uploads, and the old ones are gone.
	mkBucket(t, a, "uploads")
	lu, err = a.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: bk})
	if err != nil || len(lu.Uploads) != 0 {
		t.Fatalf("uploads of the new bucket: %d, %v; want none", len(lu.Uploads), err)
	}
	_, err = a.UploadPart(ctx, &s3.UploadPartInput{Bucket: bk, Key: aws.String("mp"), UploadId: ids[0],
		PartNumber: aws.Int32(2), Body: strings.NewReader("late")})
	wantErr(t, "UploadPart into an aborted upload", err, "NoSuchUpload", http.StatusNotFound)
	_, err = a.ListParts(ctx, &s3.ListPartsInput{Bucket: bk, Key: aws.String("mp"), UploadId: ids[0]})
	wantErr(t, "ListParts of an aborted upload", err, "NoSuchUpload", http.StatusNotFound)
	if _, err := a.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: bk}); err != nil {
		t.Fatalf("DeleteBucket of the new empty bucket: %v", err)
	}
}

// listVersionsAll pages ListObjectVersions through key and version-id
// markers, checking every version is its key's null version; it returns
// the keys and common prefixes in order.
func listVersionsAll(t *testing.T, c *s3.Client, bucket, prefix, delim string, pageSize int32) (keys, prefixes []string, pages int) {
	t.Helper()
	in := &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), MaxKeys: aws.Int32(pageSize)}
	if prefix != "" {
		in.Prefix = aws.String(prefix)
	}
	if delim != "" {
		in.Delimiter = aws.String(delim)
	}
	for {
		out, err := c.ListObjectVersions(ctxT(t), in)
		if err != nil {
			t.Fatalf("ListObjectVersions prefix=%q delimiter=%q page %d: %v", prefix, delim, pages, err)
		}
		pages++
		if n := len(out.Versions) + len(out.CommonPrefixes); n > int(pageSize) {
			t.Errorf("page %d has %d entries; max-keys %d", pages, n, pageSize)
		}
		if len(out.DeleteMarkers) != 0 {
			t.Errorf("page %d has %d delete markers; want none", pages, len(out.DeleteMarkers))
		}
		for _, v := range out.Versions {
			if aws.ToString(v.VersionId) != "null" || !aws.ToBool(v.IsLatest) || v.LastModified == nil || aws.ToString(v.ETag) == "" {
				t.Errorf("version %+v; want the latest null version", v)
			}
			if want := int64(len(aws.ToString(v.Key))); aws.ToInt64(v.Size) != want {
				t.Errorf("version %q: Size %d; want %d", aws.ToString(v.Key), aws.ToInt64(v.Size), want)
			}
			keys = append(keys, aws.ToString(v.Key))
		}
		for _, p := range out.CommonPrefixes {
			prefixes = append(prefixes, aws.ToString(p.Prefix))
		}
		if !aws.ToBool(out.IsTruncated) {
			return keys, prefixes, pages
		}
		if pages > 1000 {
			t.Fatal("listing does not end")
		}
		if out.NextKeyMarker == nil {
			t.Fatalf("page %d is truncated without a NextKeyMarker", pages)
		}
		in.KeyMarker, in.VersionIdMarker = out.NextKeyMarker, out.NextVersionIdMarker
	}
}

// TestListObjectVersions: a never-versioned bucket lists its objects as
// null versions, paged by key and version-id markers exactly as
// ListObjects pages them; the version API answers as S3 does for such a
// bucket.
func TestListObjectVersions(t *testing.T) {
	srv := startServer(t, t.TempDir())
	c := srv.createTenant(t, "alice")
	a := srv.sdk(c)
	ctx := ctxT(t)
	mkBucket(t, a, "vers")
	var keys []string
	for d := range 3 {
		for f := range 9 {
			keys = append(keys, fmt.Sprintf("dir%d/f%02d", d, f))
		}
	}
	keys = append(keys, "a-top", "m-top", "z-top", "dir1x")
	putMany(t, a, "vers", keys)
	sorted := slices.Clone(keys)
	sort.Strings(sorted)

	got, prefixes, pages := listVersionsAll(t, a, "vers", "", "", 4)
	if !slices.Equal(got, sorted) || len(prefixes) != 0 {
		t.Errorf("versions paged by 4 = %q (prefixes %q); want %q", got, prefixes, sorted)
	}
	if pages != (len(keys)+3)/4 {
		t.Errorf("%d pages of 4 for %d keys", pages, len(keys))
	}
	// With a delimiter, pages end on common prefixes too.
	got, prefixes, _ = listVersionsAll(t, a, "vers", "", "/", 2)
	if want := []string{"a-top", "dir1x", "m-top", "z-top"}; !slices.Equal(got, want) {
		t.Errorf("versions with delimiter = %q; want %q", got, want)
	}
	if want := []string{"dir0/", "dir1/", "dir2/"}; !slices.Equal(prefixes, want) {
		t.Errorf("prefixes with delimiter = %q; want %q", prefixes, want)
	}
	got, _, _ = listVersionsAll(t, a, "vers", "dir1/", "/", 5)
	if want := sorted[slices.Index(sorted, "dir1/f00") : slices.Index(sorted, "dir1/f08")+1]; !slices.Equal(got, want) {
		t.Errorf("versions under dir1/ = %q; want %q", got, want)
	}
	// Each version is its object, as ListObjectsV2 has it.
	lv, err := a.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("vers"), Prefix: aws.String("dir0/f0")})
	if err != nil {
		t.Fatal(err)
	}
	lo, err := a.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("vers"), Prefix: aws.String("dir0/f0")})
	if err != nil || len(lo.Contents) != len(lv.Versions) {
		t.Fatalf("ListObjectsV2 %d objects, %v; ListObjectVersions %d", len(lo.Contents), err, len(lv.Versions))
	}
	for i, o := range lo.Contents {
		v := lv.Versions[i]
		if aws.ToString(v.Key) != aws.ToString(o.Key) || aws.ToString(v.ETag) != aws.ToString(o.ETag) ||
			aws.ToInt64(v.Size) != aws.ToInt64(o.Size) || !v.LastModified.Equal(*o.LastModified) {
			t.Errorf("version %d %+v differs from object %+v", i, v, o)
		}
	}

	// The raw document, element by element.
	st, code, body := srv.doRaw(t, c, http.MethodGet, "/vers?versions&prefix=dir0%2F&max-keys=2&key-marker=dir0%2Ff03&version-id-marker=null", nil, nil)
	if st != http.StatusOK {
		t.Fatalf("GET ?versions: %d %s %s", st, code, truncate(body, 300))
	}
	var doc struct {
		XMLName             xml.Name
		Name                string `xml:"Name"`
		Prefix              string `xml:"Prefix"`
		KeyMarker           string `xml:"KeyMarker"`
		VersionIDMarker     string `xml:"VersionIdMarker"`
		NextKeyMarker       string `xml:"NextKeyMarker"`
		NextVersionIDMarker string `xml:"NextVersionIdMarker"`
		MaxKeys             int    `xml:"MaxKeys"`
		IsTruncated         bool   `xml:"IsTruncated"`
		Versions            []struct {
			Key, VersionID, StorageClass string
			IsLatest                     bool
			OwnerID                      string `xml:"Owner>ID"`
		} `xml:"Version"`
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	if doc.XMLName.Local != "ListVersionsResult" || doc.XMLName.Space != "http://s3.amazonaws.com/doc/2006-03-01/" ||
		doc.Name != "vers" || doc.Prefix != "dir0/" || doc.KeyMarker != "dir0/f03" || doc.VersionIDMarker != "null" ||
		doc.MaxKeys != 2 || !doc.IsTruncated || doc.NextKeyMarker != "dir0/f05" || doc.NextVersionIDMarker != "null" ||
		len(doc.Versions) != 2 || doc.Versions[0].Key != "dir0/f04" || doc.Versions[1].Key != "dir0/f05" ||
		doc.Versions[0].StorageClass != "STANDARD" || doc.Versions[0].OwnerID == "" || !doc.Versions[0].IsLatest {
		t.Errorf("ListVersionsResult:\n%s", body)
	}
	for _, el := range []string{"<VersionId>null</VersionId>", "<IsLatest>true</IsLatest>", "<Size>8</Size>"} {
		if !bytes.Contains(body, []byte(el)) {
			t.Errorf("ListVersionsResult lacks %s:\n%s", el, body)
		}
	}
	// encoding-type=url encodes keys and markers.
	putBytes(t, a, "vers", "sp ace/ü", []byte("x"))
	st, _, body = srv.doRaw(t, c, http.MethodGet, "/vers?versions&encoding-type=url&prefix=sp&key-marker=sp%20a", nil, nil)
	if st != http.StatusOK || !bytes.Contains(body, []byte("<Key>sp+ace/%C3%BC</Key>")) ||
		!bytes.Contains(body, []byte("<KeyMarker>sp+a</KeyMarker>")) || !bytes.Contains(body, []byte("<EncodingType>url</EncodingType>")) {
		t.Errorf("encoding-type=url: %d\n%s", st, body)
	}

	// Markers S3 refuses.
	_, err = a.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("vers"), KeyMarker: aws.String("a-top"), VersionIdMarker: aws.String("bogus")})
	wantErr(t, "version-id-marker bogus", err, "InvalidArgument", http.StatusBadRequest)
	_, err = a.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("vers"), VersionIdMarker: aws.String("null")})
	wantErr(t, "version-id-marker without key-marker", err, "InvalidArgument", http.StatusBadRequest)
	_, err = a.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("no-such-vers")})
	wantErr(t, "ListObjectVersions of a missing bucket", err, "NoSuchBucket", http.StatusNotFound)

	// Never versioned: an empty VersioningConfiguration, no Status.
	gv, err := a.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String("vers")})
	if err != nil || gv.Status != "" || gv.MFADelete != "" {
		t.Errorf("GetBucketVersioning = %+v, %v; want no Status", gv, err)
	}
	testVersionIDNull(t, srv, c, a)
}

// testVersionIDNull: in a never-versioned bucket versionId=null acts on
// the object; an id Facet never makes is InvalidArgument, as S3 answers a
// malformed one, and a well-formed id the key lacks is NoSuchVersion.
func testVersionIDNull(t *testing.T, srv *server, c creds, a *s3.Client) {
	ctx := ctxT(t)
	bk, key, null, bogus := aws.String("vers"), aws.String("a-top"), aws.String("null"), aws.String("3HL4kqtJlcpXroDTDmJ")
	got, err := a.GetObject(ctx, &s3.GetObjectInput{Bucket: bk, Key: key, VersionId: null})
	if err != nil {
		t.Fatalf("GetObject versionId=null: %v", err)
	}
	got.Body.Close()
	if _, err := a.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bk, Key: key, VersionId: null}); err != nil {
		t.Errorf("HeadObject versionId=null: %v", err)
	}
	_, err = a.GetObject(ctx, &s3.GetObjectInput{Bucket: bk, Key: key, VersionId: bogus})
	wantErr(t, "GetObject bogus version", err, "InvalidArgument", http.StatusBadRequest)
	_, err = a.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bk, Key: key, VersionId: bogus})
	wantErr(t, "HeadObject bogus version", err, "", http.StatusBadRequest)
	_, err = a.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bk, Key: key, VersionId: bogus})
	wantErr(t, "DeleteObject bogus version", err, "InvalidArgument", http.StatusBadRequest)
	_, err = a.GetObject(ctx, &s3.GetObjectInput{Bucket: bk, Key: key, VersionId: aws.String(strings.Repeat("f", 32))})
	wantErr(t, "GetObject missing version", err, "NoSuchVersion", http.StatusNotFound)
	// Deleting a version the key does not have deletes nothing. The
	// remote backend, which keeps no versions, answers NoSuchVersion.
	_, err = a.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bk, Key: key, VersionId: aws.String(strings.Repeat("f", 32))})
	if gatewayTarget() {
		wantErr(t, "DeleteObject of a missing version (remote backend)", err, "NoSuchVersion", http.StatusNotFound)
	} else if err != nil {
		t.Errorf("DeleteObject of a missing version: %v", err)
	}
	assertContent(t, a, "vers", "a-top", []byte("a-top"))
	_, err = a.CopyObject(ctx, &s3.CopyObjectInput{Bucket: bk, Key: aws.String("copy"), CopySource: aws.String("vers/a-top?versionId=3HL4kqtJlcpXroDTDmJ")})
	wantErr(t, "CopyObject from a bogus version", err, "InvalidArgument", http.StatusBadRequest)
	if _, err := a.CopyObject(ctx, &s3.CopyObjectInput{Bucket: bk, Key: aws.String("copy"), CopySource: aws.String("vers/a-top?versionId=null")}); err != nil {
		t.Errorf("CopyObject from the null version: %v", err)
	}
	assertContent(t, a, "vers", "copy", []byte("a-top"))
	st, code, _ := srv.doRaw(t, c, http.MethodGet, "/vers/a-top?versionId=", nil, nil)
	if st != http.StatusBadRequest || code != "InvalidArgument" {
		t.Errorf("GET versionId=(empty): %d %s; want 400 InvalidArgument", st, code)
	}

	del, err := a.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bk, Key: key, VersionId: null})
	if err != nil || aws.ToString(del.VersionId) != "null" {
		t.Errorf("DeleteObject versionId=null: %+v, %v", del, err)
	}
	assertAbsent(t, a, "vers", "a-top")

	// DeleteObjects by null version deletes; by another version, nothing.
	dels, err := a.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: bk, Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("m-top"), VersionId: null}, {Key: aws.String("z-top"), VersionId: bogus},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(dels.Deleted) != 1 || aws.ToString(dels.Deleted[0].Key) != "m-top" || aws.ToString(dels.Deleted[0].VersionId) != "null" {
		t.Errorf("DeleteObjects Deleted = %+v", dels.Deleted)
	}
	if len(dels.Errors) != 1 || aws.ToString(dels.Errors[0].Key) != "z-top" || aws.ToString(dels.Errors[0].Code) != "InvalidArgument" ||
		aws.ToString(dels.Errors[0].VersionId) != "3HL4kqtJlcpXroDTDmJ" {
		t.Errorf("DeleteObjects Errors = %+v", dels.Errors)
	}
	assertAbsent(t, a, "vers", "m-top")
	assertContent(t, a, "vers", "z-top", []byte("z-top"))
}
