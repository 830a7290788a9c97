package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/facet-sds/facet/internal/admin"
)

// quotaOf reads a tenant's quota and usage through `facet ctl quota show`.
func (s *server) quotaOf(t *testing.T, tenant string) admin.TenantQuota {
	t.Helper()
	out, err := s.ctl(t, "quota", "show", tenant, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var q admin.TenantQuota
	if err := json.Unmarshal(out, &q); err != nil {
		t.Fatalf("quota show: %v\n%s", err, out)
	}
	return q
}

func (s *server) ctlOK(t *testing.T, args ...string) {
	t.Helper()
	if _, err := s.ctl(t, args...); err != nil {
		t.Fatal(err)
	}
}

func put(t *testing.T, cl *s3.Client, bucket, key string, body []byte) error {
	t.Helper()
	_, err := cl.PutObject(ctxT(t), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)})
	return err
}

// wantQuotaExceeded checks a refusal: 403 QuotaExceeded naming the quota.
func wantQuotaExceeded(t *testing.T, what string, err error, quota string) {
	t.Helper()
	wantErr(t, what, err, "QuotaExceeded", http.StatusForbidden)
	if err != nil && !strings.Contains(err.Error(), "The "+quota+" quota of") {
		t.Errorf("%s: the message does not name the %s quota: %v", what, quota, err)
	}
}

// A PUT over the bytes quota is refused before any byte is stored: the
// object is absent and the usage unchanged. Overwrites and deletes adjust
// the usage; an aws-chunked upload is charged its decoded length.
func TestQuotaBytes(t *testing.T) {
	s := startServer(t, t.TempDir())
	c := s.createTenant(t, "acme")
	cl := s.sdk(c)
	ctx := ctxT(t)
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bk1")}); err != nil {
		t.Fatal(err)
	}
	s.ctlOK(t, "quota", "set", "acme", "--bytes", "10KiB")
	if err := put(t, cl, "bk1", "a", pattern("a", 8<<10)); err != nil {
		t.Fatal(err)
	}
	wantQuotaExceeded(t, "PUT over the bytes quota", put(t, cl, "bk1", "b", pattern("b", 4<<10)), "bytes")
	if _, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bk1"), Key: aws.String("b")}); errStatus(err) != http.StatusNotFound {
		t.Fatalf("refused object exists: %v", err)
	}
	q := s.quotaOf(t, "acme")
	if q.Usage.Bytes != 8<<10 || q.Usage.Objects != 1 || q.Effective.Bytes != 10<<10 || len(q.Buckets) != 1 || q.Buckets[0].Usage.Bytes != 8<<10 {
		t.Fatalf("usage after the refusal: %+v", q)
	}
	// aws-chunked with a trailer (x-amz-decoded-content-length): refused too.
	_, err := s.sdkTrailer(c).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bk1"), Key: aws.String("chunked"), Body: bytes.NewReader(pattern("c", 3<<10))})
	wantQuotaExceeded(t, "aws-chunked PUT over the bytes quota", err, "bytes")
	// An overwrite is charged the difference.
	if err := put(t, cl, "bk1", "a", pattern("a", 2<<10)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.sdkTrailer(c).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bk1"), Key: aws.String("chunked"), Body: bytes.NewReader(pattern("c", 3<<10))}); err != nil {
		t.Fatalf("aws-chunked PUT within the quota: %v", err)
	}
	if q := s.quotaOf(t, "acme"); q.Usage.Bytes != 5<<10 || q.Usage.Objects != 2 {
		t.Fatalf("usage after the overwrite: %+v", q.Usage)
	}
	// A copy is a write of the source's size.
	_, err = cl.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bk1"), Key: aws.String("copy"), CopySource: aws.String("bk1/a")})
	if err != nil {
		t.Fatal(err)
	}
	s.ctlOK(t, "quota", "set", "acme", "--bytes", "8KiB")
	_, err = cl.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bk1"), Key: aws.String("copy2"), CopySource: aws.String("bk1/chunked")})
	wantQuotaExceeded(t, "CopyObject over the bytes quota", err, "bytes")
	for _, k := range []string{"a", "chunked", "copy"} {
		if _, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bk1"), Key: aws.String(k)}); err != nil {
			t.Fatal(err)
		}
	}
	if q := s.quotaOf(t, "acme"); q.Usage.Bytes != 0 || q.Usage.Objects != 0 || q.Usage.PhysicalBytes != 0 {
		t.Fatalf("usage after deleting everything: %+v", q.Usage)
	}
	// A bucket's quota applies within the tenant's.
	s.ctlOK(t, "quota", "set", "acme", "--bucket", "bk1", "--bytes", "1KB")
	wantQuotaExceeded(t, "PUT over the bucket's quota", put(t, cl, "bk1", "x", pattern("x", 1001)), "bytes")
	s.ctlOK(t, "quota", "delete", "acme", "--bucket", "bk1")
	if err := put(t, cl, "bk1", "x", pattern("x", 1001)); err != nil {
		t.Fatalf("after the bucket's quota was deleted: %v", err)
	}
}

// The objects and buckets quotas, and the cap on open multipart uploads
// (N open, N+1 refused; parts count as bytes; completing and aborting give
// back).
func TestQuotaObjectsBucketsUploads(t *testing.T) {
	s := startServer(t, t.TempDir())
	c := s.createTenant(t, "acme")
	cl := s.sdk(c)
	ctx := ctxT(t)
	s.ctlOK(t, "quota", "set", "acme", "--objects", "2", "--buckets", "2", "--uploads", "2")
	for _, b := range []string{"bk1", "bk2"} {
		if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bk3")})
	wantQuotaExceeded(t, "CreateBucket over the buckets quota", err, "buckets")
	if _, err := cl.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("bk3")}); errStatus(err) != http.StatusNotFound {
		t.Fatalf("refused bucket exists: %v", err)
	}
	if err := put(t, cl, "bk1", "o1", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := put(t, cl, "bk2", "o2", []byte("2")); err != nil {
		t.Fatal(err)
	}
	wantQuotaExceeded(t, "PUT over the objects quota", put(t, cl, "bk1", "o3", []byte("3")), "objects")
	if err := put(t, cl, "bk1", "o1", []byte("overwrite")); err != nil {
		t.Fatalf("an overwrite adds no object: %v", err)
	}

	// Uploads: two open, the third refused.
	var ups []string
	for i := range 2 {
		out, err := cl.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bk1"), Key: aws.String("mp" + string(rune('a'+i)))})
		if err != nil {
			t.Fatal(err)
		}
		ups = append(ups, *out.UploadId)
	}
	_, err = cl.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bk1"), Key: aws.String("mpc")})
	wantQuotaExceeded(t, "CreateMultipartUpload over the uploads quota", err, "uploads")
	if q := s.quotaOf(t, "acme"); q.Usage.Uploads != 2 || q.Usage.Buckets != 2 || q.Usage.Objects != 2 {
		t.Fatalf("usage with two uploads: %+v", q.Usage)
	}
	// A part counts as bytes; completing an upload over the objects quota is refused.
	s.ctlOK(t, "quota", "set", "acme", "--bytes", "6MiB")
	part := pattern("p", 5<<20)
	pa, err := cl.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bk1"), Key: aws.String("mpa"), UploadId: aws.String(ups[0]), PartNumber: aws.Int32(1), Body: bytes.NewReader(part)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bk1"), Key: aws.String("mpb"), UploadId: aws.String(ups[1]), PartNumber: aws.Int32(1), Body: bytes.NewReader(pattern("q", 2<<20))})
	wantQuotaExceeded(t, "UploadPart over the bytes quota", err, "bytes")
	complete := &s3.CompleteMultipartUploadInput{Bucket: aws.String("bk1"), Key: aws.String("mpa"), UploadId: aws.String(ups[0]),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: pa.ETag}}}}
	_, err = cl.CompleteMultipartUpload(ctx, complete)
	wantQuotaExceeded(t, "CompleteMultipartUpload over the objects quota", err, "objects")
	s.ctlOK(t, "quota", "set", "acme", "--objects", "0")
	if _, err := cl.CompleteMultipartUpload(ctx, complete); err != nil {
		t.Fatalf("complete without an objects quota: %v", err)
	}
	if _, err := cl.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String("bk1"), Key: aws.String("mpb"), UploadId: aws.String(ups[1])}); err != nil {
		t.Fatal(err)
	}
	q := s.quotaOf(t, "acme")
	if q.Usage.Uploads != 0 || q.Usage.Objects != 3 || q.Usage.Bytes != int64(len(part))+int64(len("overwrite"))+1 {
		t.Fatalf("usage after complete and abort: %+v", q.Usage)
	}
	// The recount finds the same.
	out, err := s.ctl(t, "quota", "recount", "acme", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rq admin.TenantQuota
	if err := json.Unmarshal(out, &rq); err != nil || rq.Usage != q.Usage {
		t.Fatalf("recount: %+v, counters %+v (%v)", rq.Usage, q.Usage, err)
	}
	// A deleted bucket gives its bucket back.
	if _, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bk2"), Key: aws.String("o2")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("bk2")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bk3")}); err != nil {
		t.Fatalf("CreateBucket after a delete: %v", err)
	}
}

// Under a compression policy the physical bytes are what the backend
// holds, fewer than the logical ones; a policy's quota is enforced, and the
// smaller of it and the stored one wins.
func TestQuotaPolicyAndPhysical(t *testing.T) {
	s := startServer(t, t.TempDir())
	c := s.createTenant(t, "acme")
	cl := s.sdk(c)
	ctx := ctxT(t)
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bk1")}); err != nil {
		t.Fatal(err)
	}
	s.policyAdd(t, "FOR TENANT acme DO SET compression")
	if err := put(t, cl, "bk1", "zeros", make([]byte, 256<<10)); err != nil {
		t.Fatal(err)
	}
	q := s.quotaOf(t, "acme")
	if q.Usage.Bytes != 256<<10 || q.Usage.PhysicalBytes <= 0 || q.Usage.PhysicalBytes >= q.Usage.Bytes/4 {
		t.Fatalf("usage under compression: %+v", q.Usage)
	}
	s.policyAdd(t, "FOR TENANT acme DO SET quota WITH objects=2, bytes=1MiB")
	s.ctlOK(t, "quota", "set", "acme", "--objects", "5", "--bytes", "512KiB")
	q = s.quotaOf(t, "acme")
	if q.Policy.Objects != 2 || q.Stored.Objects != 5 || q.Effective.Objects != 2 || q.Effective.Bytes != 512<<10 {
		t.Fatalf("limits: %+v", q.ScopeQuota)
	}
	if err := put(t, cl, "bk1", "two", []byte("2")); err != nil {
		t.Fatal(err)
	}
	wantQuotaExceeded(t, "PUT over the policy's objects quota", put(t, cl, "bk1", "three", []byte("3")), "objects")
	if _, err := s.ctl(t, "policy", "add", "FOR TENANT acme DO SET quota WITH objects=10m"); err == nil || !strings.Contains(err.Error(), "1:43") {
		t.Fatalf("a malformed quota policy: %v", err)
	}
}

// heldPut starts a signed PUT whose body does not end until the returned
// function is called: a request in flight.
func (s *server) heldPut(t *testing.T, c creds, path string) (release func()) {
	t.Helper()
	pr, pw := io.Pipe()
	req, err := http.NewRequest(http.MethodPut, s.endpoint()+path, pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = 2
	sign(t, req, c, "UNSIGNED-PAYLOAD", time.Now())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := rawClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	if _, err := pw.Write([]byte("1")); err != nil {
		t.Fatal(err)
	}
	return func() {
		_, _ = pw.Write([]byte("2"))
		_ = pw.Close()
		<-done
	}
}

// A tenant at its cap of requests in flight is refused with 503 SlowDown;
// another tenant is not; once its requests end it is served again.
func TestQuotaTenantConnections(t *testing.T) {
	s := startServerEnv(t, t.TempDir(), "e2e-admin-"+randHex(16), []string{"FACET_TENANT_MAX_CONNECTIONS=2"})
	a, b := s.createTenant(t, "acme"), s.createTenant(t, "bob")
	for _, c := range []creds{a, b} {
		if _, err := s.sdk(c).CreateBucket(ctxT(t), &s3.CreateBucketInput{Bucket: aws.String(c.Tenant + "-b")}); err != nil {
			t.Fatal(err)
		}
	}
	r1 := s.heldPut(t, a, "/acme-b/h1")
	r2 := s.heldPut(t, a, "/acme-b/h2")
	// The held PUTs are admitted in the background: wait for the refusal.
	deadline := time.Now().Add(30 * time.Second)
	var code string
	var status int
	for time.Now().Before(deadline) {
		status, code, _ = s.doRaw(t, a, http.MethodGet, "/acme-b?list-type=2", nil, nil)
		if status == http.StatusServiceUnavailable {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status != http.StatusServiceUnavailable || code != "SlowDown" {
		t.Fatalf("third request of acme: %d %s", status, code)
	}
	if st, code, _ := s.doRaw(t, b, http.MethodGet, "/bob-b?list-type=2", nil, nil); st != http.StatusOK {
		t.Fatalf("bob while acme is at its cap: %d %s", st, code)
	}
	r1()
	r2()
	// A request's place is freed as its handler returns, just after the
	// client has its response: wait for it.
	for deadline = time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if status, code, _ = s.doRaw(t, a, http.MethodGet, "/acme-b?list-type=2", nil, nil); status != http.StatusServiceUnavailable {
			break
		}
	}
	if status != http.StatusOK {
		t.Fatalf("acme after its requests ended: %d %s", status, code)
	}
	if v, ok := s.metricValue(t, `facet_quota_refusals_total{kind="connections",tenant="acme"}`); !ok || v < 1 {
		t.Fatalf("refusals metric: %v %v", v, ok)
	}
}

// Two gateways over one Redis and one backend share a tenant's quota:
// concurrent PUTs through both never take it past its limit. Each write
// reserves its length in Redis before its body is read, so the margin is
// zero: exactly as many 4 KiB objects as fit are stored, all others are
// refused, and the counters equal what the backend lists.
func TestQuotaFleet(t *testing.T) {
	c := startCluster(t, clusterOptions{Gateways: 2})
	cr := c.gw[0].createTenant(t, "acme")
	ctx := ctxT(t)
	if _, err := c.gw[0].sdk(cr).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("shared")}); err != nil {
		t.Fatal(err)
	}
	const size, fit = 4 << 10, 25
	c.gw[1].ctlOK(t, "quota", "set", "acme", "--bytes", "100KiB")
	var mu sync.Mutex
	stored, refused := 0, 0
	var wg sync.WaitGroup
	for g := range 2 {
		cl := c.gw[g].sdk(cr)
		for w := range 16 {
			wg.Go(func() {
				for i := range 4 {
					err := put(t, cl, "shared", fmt.Sprintf("g%d-w%d-%d", g, w, i), pattern("x", size))
					mu.Lock()
					switch {
					case err == nil:
						stored++
					case errCode(err) == "QuotaExceeded":
						refused++
					default:
						t.Errorf("PUT: %v", err)
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if stored != fit || refused != 128-fit {
		t.Fatalf("stored %d, refused %d; want %d and %d", stored, refused, fit, 128-fit)
	}
	listed := 0
	p := s3.NewListObjectsV2Paginator(c.gw[1].sdk(cr), &s3.ListObjectsV2Input{Bucket: aws.String("shared")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		listed += len(page.Contents)
	}
	q := c.gw[1].quotaOf(t, "acme")
	if listed != fit || q.Usage.Bytes != fit*size || q.Usage.Objects != fit {
		t.Fatalf("backend lists %d objects; usage %+v", listed, q.Usage)
	}
}
