package e2e

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func TestBucketLifecycle(t *testing.T) {
	srv := startServer(t, t.TempDir())
	a := srv.sdk(srv.createTenant(t, "alice"))
	b := srv.sdk(srv.createTenant(t, "bob"))
	ctx := ctxT(t)

	mkBucket(t, a, "alpha")
	mkBucket(t, a, "alpha-2")
	mkBucket(t, b, "bravo")

	if _, err := a.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("alpha")}); err != nil {
		t.Errorf("HeadBucket alpha: %v", err)
	}
	_, err := a.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("nonexistent-bucket")})
	wantErr(t, "HeadBucket missing", err, "", http.StatusNotFound)

	list, err := a.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		t.Fatalf("ListBuckets: %v", err)
	}
	var names []string
	for _, bk := range list.Buckets {
		names = append(names, aws.ToString(bk.Name))
		if bk.CreationDate == nil || bk.CreationDate.IsZero() {
			t.Errorf("bucket %s has no creation date", aws.ToString(bk.Name))
		}
	}
	if !slices.Equal(names, []string{"alpha", "alpha-2"}) {
		t.Errorf("alice's ListBuckets = %v; want [alpha alpha-2] (own buckets only, sorted)", names)
	}
	list, err = b.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		t.Fatalf("ListBuckets bob: %v", err)
	}
	if len(list.Buckets) != 1 || aws.ToString(list.Buckets[0].Name) != "bravo" {
		t.Errorf("bob's ListBuckets = %v; want [bravo]", list.Buckets)
	}

	loc, err := a.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String("alpha")})
	if err != nil {
		t.Errorf("GetBucketLocation: %v", err)
	} else if lc := string(loc.LocationConstraint); lc != "" && lc != region {
		t.Errorf("GetBucketLocation = %q; want \"\" or %q", lc, region)
	}
	_, err = a.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String("nonexistent-bucket")})
	wantErr(t, "GetBucketLocation missing", err, "NoSuchBucket", http.StatusNotFound)

	_, err = a.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("alpha")})
	wantErr(t, "CreateBucket own existing", err, "BucketAlreadyOwnedByYou", http.StatusConflict)
	_, err = b.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("alpha")})
	wantErr(t, "CreateBucket another tenant's", err, "BucketAlreadyExists", http.StatusConflict)

	putBytes(t, a, "alpha", "obj", []byte("x"))
	_, err = a.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("alpha")})
	wantErr(t, "DeleteBucket non-empty", err, "BucketNotEmpty", http.StatusConflict)
	assertContent(t, a, "alpha", "obj", []byte("x"))

	if _, err := a.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("alpha"), Key: aws.String("obj")}); err != nil {
		t.Fatalf("DeleteObject: %v", err)
	}
	if _, err := a.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("alpha")}); err != nil {
		t.Fatalf("DeleteBucket empty: %v", err)
	}
	_, err = a.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("alpha")})
	wantErr(t, "HeadBucket deleted", err, "", http.StatusNotFound)
	_, err = a.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("alpha")})
	wantErr(t, "DeleteBucket deleted", err, "NoSuchBucket", http.StatusNotFound)
	_, err = a.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("alpha")})
	wantErr(t, "ListObjectsV2 deleted", err, "NoSuchBucket", http.StatusNotFound)

	// A deleted bucket's name is free again, and its old objects are gone.
	mkBucket(t, b, "alpha")
	out, err := b.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("alpha")})
	if err != nil {
		t.Fatalf("ListObjectsV2 recreated: %v", err)
	}
	if len(out.Contents) != 0 {
		t.Errorf("recreated bucket lists %d objects; want 0", len(out.Contents))
	}
}

func TestInvalidBucketNames(t *testing.T) {
	srv := startServer(t, t.TempDir())
	c := srv.createTenant(t, "alice")
	a := srv.sdk(c)
	ctx := ctxT(t)
	bad := []string{
		"ab",                    // too short
		strings.Repeat("a", 64), // too long
		"UpperCase",             // upper case
		"under_score",           // underscore
		"-leading-hyphen",       // must start with letter or digit
		"trailing-hyphen-",      // must end with letter or digit
		"double..dot",           // adjacent periods
		"192.168.5.4",           // IP address form
	}
	for _, name := range bad {
		_, err := a.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
		wantErr(t, "CreateBucket "+name, err, "InvalidBucketName", http.StatusBadRequest)
	}
	// Raw requests, so no client-side rewriting gets in the way.
	for _, name := range []string{"ab", "Bad_Name", "a%20b"} {
		st, code, body := srv.doRaw(t, c, http.MethodPut, "/"+name, nil, nil)
		wantRaw(t, "raw PUT /"+name, st, code, body, http.StatusBadRequest, "InvalidBucketName")
	}
	list, err := a.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Buckets) != 0 {
		t.Errorf("after only invalid creates, ListBuckets = %d buckets; want 0", len(list.Buckets))
	}
	good := []string{"abc", strings.Repeat("a", 63), "with.dots.ok", "digits-123", "1starts-with-digit"}
	for _, name := range good {
		if _, err := a.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Errorf("CreateBucket %q: %v", name, err)
		}
	}
}

func TestVirtualHostStyle(t *testing.T) {
	srv := startServer(t, t.TempDir())
	c := srv.createTenant(t, "alice")
	vh := srv.sdkVirtualHost(c)
	ps := srv.sdk(c)
	mkBucket(t, vh, "vhost-bucket")
	body := []byte("virtual host style body")
	putBytes(t, vh, "vhost-bucket", "dir/a b//c", body)
	assertContent(t, ps, "vhost-bucket", "dir/a b//c", body)
	assertContent(t, vh, "vhost-bucket", "dir/a b//c", body)
	out, err := vh.ListObjectsV2(ctxT(t), &s3.ListObjectsV2Input{Bucket: aws.String("vhost-bucket")})
	if err != nil {
		t.Fatalf("ListObjectsV2 virtual host: %v", err)
	}
	if len(out.Contents) != 1 || aws.ToString(out.Contents[0].Key) != "dir/a b//c" {
		t.Errorf("virtual-host listing = %v; want [dir/a b//c]", out.Contents)
	}
}
