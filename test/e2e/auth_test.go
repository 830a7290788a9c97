package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/minio/minio-go/v7"
)

func httpGet(t *testing.T, rawURL string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	return send(t, req)
}

func TestPresignedURLs(t *testing.T) {
	srv := startServer(t, t.TempDir())
	ca := srv.createTenant(t, "alice")
	cb := srv.createTenant(t, "bob")
	a := srv.sdk(ca)
	ctx := ctxT(t)
	mkBucket(t, a, "pre")
	body := []byte("presigned content")
	putBytes(t, a, "pre", "dir/obj name", body)
	presign := s3.NewPresignClient(a)

	long, err := presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("pre"), Key: aws.String("dir/obj name")}, s3.WithPresignExpires(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	short, err := presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("pre"), Key: aws.String("dir/obj name")}, s3.WithPresignExpires(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	st, code, got := httpGet(t, short.URL)
	if st != http.StatusOK || !bytes.Equal(got, body) {
		t.Errorf("presigned GET before expiry: %d %s %q; want 200 %q", st, code, got, body)
	}

	// Tampering with anything signed breaks the signature.
	u, _ := url.Parse(long.URL)
	q := u.Query()
	sig := q.Get("X-Amz-Signature")
	q.Set("X-Amz-Signature", strings.Repeat("0", len(sig)))
	u.RawQuery = q.Encode()
	st, code, got = httpGet(t, u.String())
	wantRaw(t, "presigned GET with a forged signature", st, code, got, http.StatusForbidden, "SignatureDoesNotMatch")
	u, _ = url.Parse(long.URL)
	u.RawPath, u.Path = "", strings.Replace(u.Path, "obj name", "obj namf", 1)
	st, code, got = httpGet(t, u.String())
	wantRaw(t, "presigned GET for another key", st, code, got, http.StatusForbidden, "SignatureDoesNotMatch")
	u, _ = url.Parse(long.URL)
	q = u.Query()
	q.Set("X-Amz-Expires", "7200")
	u.RawQuery = q.Encode()
	st, code, got = httpGet(t, u.String())
	wantRaw(t, "presigned GET with a lengthened expiry", st, code, got, http.StatusForbidden, "SignatureDoesNotMatch")

	// Presigned PUT.
	pput, err := presign.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("pre"), Key: aws.String("uploaded")}, s3.WithPresignExpires(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	up := []byte("uploaded through a presigned URL")
	req, err := http.NewRequest(http.MethodPut, pput.URL, bytes.NewReader(up))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range pput.SignedHeader {
		if !strings.EqualFold(k, "host") {
			req.Header[k] = v
		}
	}
	st, code, got = send(t, req)
	if st != http.StatusOK {
		t.Errorf("presigned PUT: %d %s %s", st, code, got)
	} else {
		assertContent(t, a, "pre", "uploaded", up)
	}

	// Another tenant's presigned URL for alice's object.
	bpre, err := s3.NewPresignClient(srv.sdk(cb)).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("pre"), Key: aws.String("dir/obj name")}, s3.WithPresignExpires(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	st, code, got = httpGet(t, bpre.URL)
	wantRaw(t, "bob's presigned GET of alice's object", st, code, got, http.StatusForbidden, "AccessDenied")

	// A URL signed 20 minutes ago that lives an hour is still good: presigned
	// requests are bound by their expiry, not by clock skew.
	old, _ := http.NewRequest(http.MethodGet, srv.endpoint()+"/pre/dir/obj%20name?X-Amz-Expires=3600", nil)
	oldURL, _, err := signer.PresignHTTP(ctx, aws.Credentials{AccessKeyID: ca.AccessKey, SecretAccessKey: ca.SecretKey}, old, "UNSIGNED-PAYLOAD", "s3", region, time.Now().Add(-20*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	st, code, got = httpGet(t, oldURL)
	if st != http.StatusOK || !bytes.Equal(got, body) {
		t.Errorf("presigned GET signed 20 min ago, expiring in 1 h: %d %s %q; want 200", st, code, got)
	}

	time.Sleep(3 * time.Second)
	st, code, got = httpGet(t, short.URL)
	wantRaw(t, "presigned GET after expiry", st, code, got, http.StatusForbidden, "AccessDenied")
	if st == http.StatusForbidden && !bytes.Contains(got, []byte("expired")) {
		t.Errorf("expired presigned GET: message does not say it expired: %s", got)
	}
}

// skewedSigner signs as if the clock were off by skew.
type skewedSigner struct {
	inner *v4.Signer
	skew  time.Duration
}

func (s skewedSigner) SignHTTP(ctx context.Context, c aws.Credentials, r *http.Request, payloadHash, service, region string, at time.Time, opts ...func(*v4.SignerOptions)) error {
	return s.inner.SignHTTP(ctx, c, r, payloadHash, service, region, at.Add(s.skew), opts...)
}

func TestAuthFailures(t *testing.T) {
	srv := startServer(t, t.TempDir())
	c := srv.createTenant(t, "alice")
	a := srv.sdk(c)
	ctx := ctxT(t)
	mkBucket(t, a, "auth")
	putBytes(t, a, "auth", "existing", []byte("old"))

	wrongSecret := srv.sdk(creds{AccessKey: c.AccessKey, SecretKey: c.SecretKey[:len(c.SecretKey)-1] + "x"})
	if c.SecretKey[len(c.SecretKey)-1] == 'x' {
		wrongSecret = srv.sdk(creds{AccessKey: c.AccessKey, SecretKey: c.SecretKey[:len(c.SecretKey)-1] + "y"})
	}
	unknownKey := srv.sdk(creds{AccessKey: "AKIDNOSUCHKEY0000000", SecretKey: c.SecretKey})
	for name, cl := range map[string]*s3.Client{"wrong secret": wrongSecret, "unknown key": unknownKey} {
		want := "SignatureDoesNotMatch"
		if name == "unknown key" {
			want = "InvalidAccessKeyId"
		}
		_, err := cl.ListBuckets(ctx, &s3.ListBucketsInput{})
		wantErr(t, name+" ListBuckets", err, want, http.StatusForbidden)
		_, err = cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("auth"), Key: aws.String("existing")})
		wantErr(t, name+" GetObject", err, want, http.StatusForbidden)
		_, err = cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("auth"), Key: aws.String("existing"), Body: strings.NewReader("new")})
		wantErr(t, name+" PutObject", err, want, http.StatusForbidden)
		_, err = cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("auth"), Key: aws.String("created"), Body: strings.NewReader("new")})
		wantErr(t, name+" PutObject new", err, want, http.StatusForbidden)
		_, err = cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("auth"), Key: aws.String("existing")})
		wantErr(t, name+" DeleteObject", err, want, http.StatusForbidden)
		_, err = cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("auth-2")})
		wantErr(t, name+" CreateBucket", err, want, http.StatusForbidden)
	}
	// Over "TLS" the SDK streams with an unsigned trailer: the seed signature
	// must still be checked.
	_, err := srv.sdkTrailer(creds{AccessKey: c.AccessKey, SecretKey: "wrong"}).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("auth"), Key: aws.String("created"), Body: strings.NewReader("new")})
	wantErr(t, "wrong secret trailer PutObject", err, "SignatureDoesNotMatch", http.StatusForbidden)
	// minio-go over plain HTTP signs every chunk (STREAMING-AWS4-HMAC-SHA256-PAYLOAD).
	_, err = srv.minio(t, creds{AccessKey: c.AccessKey, SecretKey: "wrong"}).PutObject(ctx, "auth", "created", strings.NewReader("new"), 3, minio.PutObjectOptions{})
	if err == nil || minio.ToErrorResponse(err).Code != "SignatureDoesNotMatch" {
		t.Errorf("wrong secret minio PutObject: %v; want SignatureDoesNotMatch", err)
	}

	// Clock skew beyond 15 minutes either way.
	for _, skew := range []time.Duration{-20 * time.Minute, 20 * time.Minute} {
		sk := srv.sdk(c, func(o *s3.Options) { o.HTTPSignerV4 = skewedSigner{v4.NewSigner(), skew} })
		_, err := sk.ListBuckets(ctx, &s3.ListBucketsInput{})
		wantErr(t, "ListBuckets with clock "+skew.String(), err, "RequestTimeTooSkewed", http.StatusForbidden)
		_, err = sk.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("auth"), Key: aws.String("skewed"), Body: strings.NewReader("new")})
		wantErr(t, "PutObject with clock "+skew.String(), err, "RequestTimeTooSkewed", http.StatusForbidden)
		req := srv.newRaw(t, http.MethodGet, "/auth/existing", nil)
		sign(t, req, c, sha256hex(nil), time.Now().Add(skew))
		st, code, body := send(t, req)
		wantRaw(t, "raw GET with clock "+skew.String(), st, code, body, http.StatusForbidden, "RequestTimeTooSkewed")
	}
	// Ten minutes is within the allowed skew.
	sk := srv.sdk(c, func(o *s3.Options) { o.HTTPSignerV4 = skewedSigner{v4.NewSigner(), -10 * time.Minute} })
	if _, err := sk.ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil {
		t.Errorf("ListBuckets with clock 10 min behind: %v; want success", err)
	}

	// Anonymous requests.
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		var body io.Reader
		if m == http.MethodPut {
			body = strings.NewReader("anon")
		}
		req, _ := http.NewRequest(m, srv.endpoint()+"/auth/existing", body)
		st, code, rb := send(t, req)
		wantRaw(t, "anonymous "+m, st, code, rb, http.StatusForbidden, "AccessDenied")
	}
	req, _ := http.NewRequest(http.MethodGet, srv.endpoint()+"/", nil)
	st, code, rb := send(t, req)
	wantRaw(t, "anonymous ListBuckets", st, code, rb, http.StatusForbidden, "AccessDenied")

	// A signed payload hash that does not match the body.
	req = srv.newRaw(t, http.MethodPut, "/auth/existing", []byte("tampered body"))
	sign(t, req, c, sha256hex([]byte("the body that was signed")), time.Now())
	st, code, rb = send(t, req)
	wantRaw(t, "PUT with mismatched x-amz-content-sha256", st, code, rb, http.StatusBadRequest, "XAmzContentSHA256Mismatch")
	// A garbled Authorization header.
	req = srv.newRaw(t, http.MethodGet, "/auth/existing", nil)
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=garbage")
	req.Header.Set("X-Amz-Date", time.Now().UTC().Format("20060102T150405Z"))
	st, code, rb = send(t, req)
	if st != http.StatusBadRequest && st != http.StatusForbidden {
		t.Errorf("garbled Authorization: %d %s; want 400 or 403", st, code)
	}

	// After all of that, nothing changed.
	assertContent(t, a, "auth", "existing", []byte("old"))
	assertAbsent(t, a, "auth", "created")
	assertAbsent(t, a, "auth", "skewed")
	list, err := a.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil || len(list.Buckets) != 1 {
		t.Errorf("ListBuckets: %v; want only bucket auth", err)
	}
}

func TestCrossTenantDenial(t *testing.T) {
	srv := startServer(t, t.TempDir())
	ca := srv.createTenant(t, "alice")
	cb := srv.createTenant(t, "bob")
	a, b := srv.sdk(ca), srv.sdk(cb)
	ctx := ctxT(t)
	mkBucket(t, a, "alice-private")
	mkBucket(t, b, "bob-bucket")
	secret := []byte("alice's secret")
	putBytes(t, a, "alice-private", "secret", secret)
	putBytes(t, b, "bob-bucket", "bobs", []byte("bob's"))
	mp, err := a.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("alice-private"), Key: aws.String("mp")})
	if err != nil {
		t.Fatal(err)
	}
	// A versioned bucket of alice's, with a version and a delete marker.
	mkBucket(t, a, "alice-versions")
	// Over the remote backend, which keeps no versions (it refuses
	// versioning with 501), the bucket stays unversioned and the checks
	// below name well-formed ids it does not have: the other tenant must
	// be refused before any version is looked at, all the same.
	if _, err := a.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("alice-versions"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		var ae smithy.APIError
		if !gatewayTarget() || !errors.As(err, &ae) || ae.ErrorCode() != "NotImplemented" {
			t.Fatal(err)
		}
	}
	vput, err := a.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("alice-versions"), Key: aws.String("v"), Body: strings.NewReader("a,b\n1,2\n")})
	if err != nil {
		t.Fatal(err)
	}
	vdel, err := a.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("alice-versions"), Key: aws.String("v")})
	if err != nil {
		t.Fatal(err)
	}
	vb, vk, vid, vmarker := aws.String("alice-versions"), aws.String("v"), vput.VersionId, vdel.VersionId
	if vid == nil || vmarker == nil {
		vid, vmarker = aws.String(strings.Repeat("a", 32)), aws.String(strings.Repeat("b", 32))
	}
	bmp, err := b.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bob-bucket"), Key: aws.String("mp")})
	if err != nil {
		t.Fatal(err)
	}

	const denied = "AccessDenied"
	bk, key := aws.String("alice-private"), aws.String("secret")
	checks := []struct {
		what string
		call func() error
	}{
		{"ListObjectsV2", func() error { _, err := b.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: bk}); return err }},
		{"ListObjects", func() error { _, err := b.ListObjects(ctx, &s3.ListObjectsInput{Bucket: bk}); return err }},
		{"ListObjectVersions", func() error {
			_, err := b.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: bk})
			return err
		}},
		{"ListObjectVersions with a bogus marker", func() error {
			_, err := b.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: bk, KeyMarker: key, VersionIdMarker: aws.String("bogus")})
			return err
		}},
		{"GetBucketVersioning", func() error {
			_, err := b.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: bk})
			return err
		}},
		{"GetObject versionId=null", func() error {
			_, err := b.GetObject(ctx, &s3.GetObjectInput{Bucket: bk, Key: key, VersionId: aws.String("null")})
			return err
		}},
		{"GetObject bogus versionId", func() error {
			_, err := b.GetObject(ctx, &s3.GetObjectInput{Bucket: bk, Key: key, VersionId: aws.String("bogus")})
			return err
		}},
		{"DeleteObject versionId=null", func() error {
			_, err := b.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bk, Key: key, VersionId: aws.String("null")})
			return err
		}},
		{"DeleteObjects by null version", func() error {
			_, err := b.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: bk, Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: key, VersionId: aws.String("null")}}}})
			return err
		}},
		{"CopyObject from alice's bogus version", func() error {
			_, err := b.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bob-bucket"), Key: aws.String("stolen"), CopySource: aws.String("alice-private/secret?versionId=bogus")})
			return err
		}},
		{"PutBucketVersioning", func() error {
			_, err := b.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: vb,
				VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusSuspended}})
			return err
		}},
		{"GetBucketVersioning of a versioned bucket", func() error {
			_, err := b.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: vb})
			return err
		}},
		{"ListObjectVersions of a versioned bucket", func() error {
			_, err := b.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: vb, KeyMarker: vk, VersionIdMarker: vid})
			return err
		}},
		{"GetObject by version", func() error {
			_, err := b.GetObject(ctx, &s3.GetObjectInput{Bucket: vb, Key: vk, VersionId: vid})
			return err
		}},
		{"GetObject of a delete marker", func() error {
			_, err := b.GetObject(ctx, &s3.GetObjectInput{Bucket: vb, Key: vk, VersionId: vmarker})
			return err
		}},
		{"GetObject whose latest is a delete marker", func() error {
			_, err := b.GetObject(ctx, &s3.GetObjectInput{Bucket: vb, Key: vk})
			return err
		}},
		{"DeleteObject by version", func() error {
			_, err := b.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: vb, Key: vk, VersionId: vid})
			return err
		}},
		{"DeleteObject of a delete marker", func() error {
			_, err := b.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: vb, Key: vk, VersionId: vmarker})
			return err
		}},
		{"DeleteObject into a versioned bucket (a marker)", func() error {
			_, err := b.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: vb, Key: vk})
			return err
		}},
		{"DeleteObjects by version", func() error {
			_, err := b.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: vb, Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: vk, VersionId: vid}}}})
			return err
		}},
		{"PutObject into a versioned bucket", func() error {
			_, err := b.PutObject(ctx, &s3.PutObjectInput{Bucket: vb, Key: vk, Body: strings.NewReader("pwned")})
			return err
		}},
		{"CopyObject from alice's version", func() error {
			_, err := b.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bob-bucket"), Key: aws.String("stolen"), CopySource: aws.String("alice-versions/v?versionId=" + *vid)})
			return err
		}},
		{"UploadPartCopy from alice's version", func() error {
			_, err := b.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String("bob-bucket"), Key: aws.String("mp"), UploadId: bmp.UploadId,
				PartNumber: aws.Int32(1), CopySource: aws.String("alice-versions/v?versionId=" + *vid)})
			return err
		}},
		{"SelectObjectContent by version", func() error {
			_, err := b.SelectObjectContent(ctx, &s3.SelectObjectContentInput{Bucket: vb, Key: vk,
				Expression: aws.String("SELECT * FROM S3Object"), ExpressionType: types.ExpressionTypeSql,
				InputSerialization:  &types.InputSerialization{CSV: &types.CSVInput{}},
				OutputSerialization: &types.OutputSerialization{CSV: &types.CSVOutput{}}}, withQuery("versionId", *vid))
			return err
		}},
		{"GetObjectAcl by version", func() error {
			_, err := b.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: vb, Key: vk, VersionId: vid})
			return err
		}},
		{"GetObject", func() error { _, err := b.GetObject(ctx, &s3.GetObjectInput{Bucket: bk, Key: key}); return err }},
		{"GetObject missing key", func() error {
			_, err := b.GetObject(ctx, &s3.GetObjectInput{Bucket: bk, Key: aws.String("nope")})
			return err
		}},
		{"PutObject overwrite", func() error {
			_, err := b.PutObject(ctx, &s3.PutObjectInput{Bucket: bk, Key: key, Body: strings.NewReader("pwned")})
			return err
		}},
		{"PutObject new", func() error {
			_, err := b.PutObject(ctx, &s3.PutObjectInput{Bucket: bk, Key: aws.String("planted"), Body: strings.NewReader("pwned")})
			return err
		}},
		{"DeleteObject", func() error { _, err := b.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bk, Key: key}); return err }},
		{"DeleteObjects", func() error {
			_, err := b.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: bk, Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: key}}}})
			return err
		}},
		{"DeleteBucket", func() error { _, err := b.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: bk}); return err }},
		{"GetBucketLocation", func() error { _, err := b.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: bk}); return err }},
		{"CopyObject from alice", func() error {
			_, err := b.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bob-bucket"), Key: aws.String("stolen"), CopySource: aws.String("alice-private/secret")})
			return err
		}},
		{"CopyObject into alice", func() error {
			_, err := b.CopyObject(ctx, &s3.CopyObjectInput{Bucket: bk, Key: aws.String("planted"), CopySource: aws.String("bob-bucket/bobs")})
			return err
		}},
		{"CreateMultipartUpload", func() error {
			_, err := b.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: bk, Key: aws.String("planted")})
			return err
		}},
		{"ListMultipartUploads", func() error {
			_, err := b.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: bk})
			return err
		}},
		{"UploadPart into alice's upload", func() error {
			_, err := b.UploadPart(ctx, &s3.UploadPartInput{Bucket: bk, Key: aws.String("mp"), UploadId: mp.UploadId, PartNumber: aws.Int32(1), Body: strings.NewReader("x")})
			return err
		}},
		{"ListParts of alice's upload", func() error {
			_, err := b.ListParts(ctx, &s3.ListPartsInput{Bucket: bk, Key: aws.String("mp"), UploadId: mp.UploadId})
			return err
		}},
		{"AbortMultipartUpload of alice's upload", func() error {
			_, err := b.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: bk, Key: aws.String("mp"), UploadId: mp.UploadId})
			return err
		}},
	}
	for _, c := range checks {
		wantErr(t, "bob "+c.what, c.call(), denied, http.StatusForbidden)
	}
	// HEAD has no body: status only.
	_, err = b.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bk, Key: key})
	wantErr(t, "bob HeadObject", err, "", http.StatusForbidden)
	_, err = b.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bk, Key: key, VersionId: aws.String("bogus")})
	wantErr(t, "bob HeadObject bogus versionId", err, "", http.StatusForbidden)
	_, err = b.HeadObject(ctx, &s3.HeadObjectInput{Bucket: vb, Key: vk, VersionId: vid})
	wantErr(t, "bob HeadObject by version", err, "", http.StatusForbidden)
	// Alice's versions are as she left them (where versions are kept).
	if !gatewayTarget() {
		if got, err := a.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: vb}); err != nil || got.Status != types.BucketVersioningStatusEnabled {
			t.Errorf("alice's versioning after bob: %v %v", got, err)
		}
		if lv, err := a.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: vb}); err != nil || len(lv.Versions) != 1 || len(lv.DeleteMarkers) != 1 {
			t.Errorf("alice's versions after bob: %v", err)
		}
	}
	_, err = b.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: bk})
	wantErr(t, "bob HeadBucket", err, "", http.StatusForbidden)
	_, err = b.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bk})
	wantErr(t, "bob CreateBucket alice's name", err, "BucketAlreadyExists", http.StatusConflict)

	// UploadPartCopy from alice's object into bob's own upload.
	_, err = b.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String("bob-bucket"), Key: aws.String("mp"), UploadId: bmp.UploadId, PartNumber: aws.Int32(1), CopySource: aws.String("alice-private/secret")})
	wantErr(t, "bob UploadPartCopy from alice", err, denied, http.StatusForbidden)

	list, err := b.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range list.Buckets {
		if aws.ToString(x.Name) != "bob-bucket" {
			t.Errorf("bob's ListBuckets shows %q", aws.ToString(x.Name))
		}
	}

	// Alice's data is untouched.
	assertContent(t, a, "alice-private", "secret", secret)
	assertAbsent(t, a, "alice-private", "planted")
	assertAbsent(t, b, "bob-bucket", "stolen")
	if keys := listAll(t, a, "alice-private", ""); !sameSet(keys, []string{"secret"}) {
		t.Errorf("alice's bucket lists %q; want [secret]", keys)
	}
	ups, err := a.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: bk})
	if err != nil || len(ups.Uploads) != 1 {
		t.Errorf("alice's uploads after bob's attempts: %v; want her one upload", err)
	}
	parts, err := a.ListParts(ctx, &s3.ListPartsInput{Bucket: bk, Key: aws.String("mp"), UploadId: mp.UploadId})
	if err != nil {
		t.Errorf("alice ListParts: %v", err)
	} else if len(parts.Parts) != 0 {
		t.Errorf("alice's upload has %d parts after bob's attempt; want 0", len(parts.Parts))
	}
	// The same through minio-go, which signs differently (streaming V4).
	mb := srv.minio(t, cb)
	if _, err := mb.PutObject(ctx, "alice-private", "planted-minio", bytes.NewReader([]byte("x")), 1, minio.PutObjectOptions{}); err == nil {
		t.Errorf("bob's minio PutObject into alice's bucket succeeded")
	}
	assertAbsent(t, a, "alice-private", "planted-minio")
}
