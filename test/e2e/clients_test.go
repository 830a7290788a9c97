package e2e

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"
)

const region = "us-east-1"

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// sdk returns an aws-sdk-go-v2 S3 client for c, path-style, without retries
// (a retry would hide the first answer, which is what the tests check).
func (s *server) sdk(c creds, opts ...func(*s3.Options)) *s3.Client {
	o := s3.Options{
		Region:           region,
		BaseEndpoint:     aws.String(s.endpoint()),
		UsePathStyle:     true,
		Credentials:      credentials.NewStaticCredentialsProvider(c.AccessKey, c.SecretKey, ""),
		RetryMaxAttempts: 1,
		HTTPClient:       s.httpClient(2 * time.Minute),
	}
	for _, f := range opts {
		f(&o)
	}
	return s3.New(o)
}

// sdkTrailer returns an SDK client that believes it talks HTTPS, so that it
// uses its default upload mode for TLS: STREAMING-UNSIGNED-PAYLOAD-TRAILER
// with an x-amz-checksum-* trailer. The transport quietly sends the request
// over plain HTTP; the signature does not cover the scheme.
func (s *server) sdkTrailer(c creds, opts ...func(*s3.Options)) *s3.Client {
	cl, _ := s.sdkTrailerRecorded(c, opts...)
	return cl
}

// sdkTrailerRecorded is sdkTrailer plus a record of the payload modes
// (x-amz-content-sha256) its requests used, so a test can prove which mode
// it exercised.
func (s *server) sdkTrailerRecorded(c creds, opts ...func(*s3.Options)) (*s3.Client, *plainHTTP) {
	p := &plainHTTP{rt: http.DefaultTransport, modes: map[string]int{}}
	o := append([]func(*s3.Options){func(o *s3.Options) {
		o.BaseEndpoint = aws.String("https://" + s.s3Addr)
		o.HTTPClient = &http.Client{Timeout: 2 * time.Minute, Transport: p}
	}}, opts...)
	return s.sdk(c, o...), p
}

type plainHTTP struct {
	rt    http.RoundTripper
	mu    sync.Mutex
	modes map[string]int // x-amz-content-sha256 of PUTs -> count
}

func (p *plainHTTP) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut {
		p.mu.Lock()
		p.modes[r.Header.Get("X-Amz-Content-Sha256")]++
		p.mu.Unlock()
	}
	r2 := r.Clone(r.Context())
	r2.URL.Scheme = "http"
	return p.rt.RoundTrip(r2)
}

func (p *plainHTTP) count(mode string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.modes[mode]
}

// sdkVirtualHost returns an SDK client using virtual-host style addressing
// (bucket.localhost:port); every connection goes to the server's address.
func (s *server) sdkVirtualHost(c creds) *s3.Client {
	_, port, _ := net.SplitHostPort(s.s3Addr)
	addr := s.s3Addr
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	return s.sdk(c, func(o *s3.Options) {
		o.BaseEndpoint = aws.String("http://localhost:" + port)
		o.UsePathStyle = false
		o.HTTPClient = &http.Client{Timeout: 2 * time.Minute, Transport: tr}
	})
}

func (s *server) minio(t *testing.T, c creds) *minio.Client {
	t.Helper()
	mc, err := minio.New(s.s3Addr, &minio.Options{
		Creds:        miniocreds.NewStaticV4(c.AccessKey, c.SecretKey, ""),
		Secure:       false,
		Region:       region,
		BucketLookup: minio.BucketLookupPath,
		MaxRetries:   1,
	})
	if err != nil {
		t.Fatal(err)
	}
	return mc
}

// errCode is the S3 error code carried by an SDK error ("" if none).
func errCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// errStatus is the HTTP status of an SDK error (0 if none).
func errStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// wantErr fails unless err is an S3 error with the given code (skipped when
// "") and HTTP status (skipped when 0).
func wantErr(t *testing.T, what string, err error, code string, status int) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: succeeded; want error %s (%d)", what, code, status)
		return
	}
	if code != "" && errCode(err) != code {
		t.Errorf("%s: error code %q (status %d); want %q (%d); err: %v", what, errCode(err), errStatus(err), code, status, err)
		return
	}
	if status != 0 && errStatus(err) != status {
		t.Errorf("%s: HTTP status %d; want %d; err: %v", what, errStatus(err), status, err)
	}
}

func md5hex(b []byte) string {
	h := md5.Sum(b)
	return hex.EncodeToString(h[:])
}

func md5b64(b []byte) string {
	h := md5.Sum(b)
	return base64.StdEncoding.EncodeToString(h[:])
}

func sha256hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// quotedETag is the ETag S3 gives a single-part object.
func quotedETag(b []byte) string { return `"` + md5hex(b) + `"` }

// pattern returns n deterministic bytes that differ per seed.
func pattern(seed string, n int) []byte {
	out := make([]byte, 0, n+sha256.Size)
	block := sha256.Sum256([]byte(seed))
	for len(out) < n {
		out = append(out, block[:]...)
		block = sha256.Sum256(block[:])
	}
	return out[:n]
}

// rawClient sends hand-built requests; it never follows redirects.
var rawClient = &http.Client{
	Timeout: 2 * time.Minute,
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

// signer signs the way S3 clients do: the path is not escaped a second time.
var signer = v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })

// newRaw builds a request to the S3 endpoint. pathAndQuery is already
// escaped ("/bucket/a%20b?uploads").
func (s *server) newRaw(t *testing.T, method, pathAndQuery string, body []byte) *http.Request {
	t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, s.endpoint()+pathAndQuery, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.ContentLength = int64(len(body))
	}
	return req
}

// sign signs req for c at time at with the given payload hash (a hex SHA-256,
// UNSIGNED-PAYLOAD or a STREAMING-* value), setting x-amz-content-sha256.
func sign(t *testing.T, req *http.Request, c creds, payloadHash string, at time.Time) {
	t.Helper()
	req.Header.Set("X-Amz-Content-Sha256", payloadHash)
	err := signer.SignHTTP(context.Background(),
		aws.Credentials{AccessKeyID: c.AccessKey, SecretAccessKey: c.SecretKey},
		req, payloadHash, "s3", region, at)
	if err != nil {
		t.Fatal(err)
	}
}

// doRaw signs (payload hashed) and sends a request, returning the status,
// the S3 error code if the body is an error document, and the body.
func (s *server) doRaw(t *testing.T, c creds, method, pathAndQuery string, body []byte, hdr http.Header) (int, string, []byte) {
	t.Helper()
	req := s.newRaw(t, method, pathAndQuery, body)
	for k, v := range hdr {
		req.Header[k] = v
	}
	sign(t, req, c, sha256hex(body), time.Now())
	return send(t, req)
}

func send(t *testing.T, req *http.Request) (int, string, []byte) {
	t.Helper()
	resp, err := rawClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", req.Method, req.URL, err)
	}
	return resp.StatusCode, xmlErrCode(b), b
}

// xmlErrCode extracts <Error><Code> from an S3 error document.
func xmlErrCode(b []byte) string {
	var e struct {
		XMLName xml.Name `xml:"Error"`
		Code    string   `xml:"Code"`
	}
	if xml.Unmarshal(b, &e) != nil {
		return ""
	}
	return e.Code
}

// wantRaw fails unless a raw answer has the wanted status and error code.
func wantRaw(t *testing.T, what string, status int, code string, body []byte, wantStatus int, wantCode string) {
	t.Helper()
	if status != wantStatus || (wantCode != "" && code != wantCode) {
		t.Errorf("%s: got %d %q; want %d %q; body: %s", what, status, code, wantStatus, wantCode, truncate(body, 400))
	}
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// getBytes reads an object fully with the SDK.
func getBytes(t *testing.T, c *s3.Client, bucket, key string) ([]byte, *s3.GetObjectOutput) {
	t.Helper()
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatalf("GetObject %s/%q: %v", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("GetObject %s/%q: reading body: %v", bucket, key, err)
	}
	return b, out
}

// putBytes writes an object with the SDK and returns its ETag.
func putBytes(t *testing.T, c *s3.Client, bucket, key string, body []byte) string {
	t.Helper()
	out, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(body)})
	if err != nil {
		t.Fatalf("PutObject %s/%q: %v", bucket, key, err)
	}
	return aws.ToString(out.ETag)
}

func mkBucket(t *testing.T, c *s3.Client, bucket string) {
	t.Helper()
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatalf("CreateBucket %s: %v", bucket, err)
	}
}

// assertAbsent fails unless HEAD on the object answers 404.
func assertAbsent(t *testing.T, c *s3.Client, bucket, key string) {
	t.Helper()
	_, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
	if err == nil {
		t.Errorf("object %s/%q exists; want it absent", bucket, truncKey(key))
		return
	}
	if errStatus(err) != http.StatusNotFound {
		t.Errorf("HEAD %s/%q: %v; want 404", bucket, truncKey(key), err)
	}
}

// assertContent fails unless the object reads back as want with an MD5 ETag.
func assertContent(t *testing.T, c *s3.Client, bucket, key string, want []byte) {
	t.Helper()
	got, out := getBytes(t, c, bucket, key)
	if !bytes.Equal(got, want) {
		t.Errorf("object %s/%q: got %d bytes (md5 %s); want %d bytes (md5 %s)", bucket, truncKey(key), len(got), md5hex(got), len(want), md5hex(want))
	}
	if etag := aws.ToString(out.ETag); etag != quotedETag(want) && !strings.Contains(etag, "-") {
		t.Errorf("object %s/%q: ETag %s; want %s", bucket, truncKey(key), etag, quotedETag(want))
	}
}

func truncKey(k string) string {
	if len(k) > 60 {
		return k[:60] + "..."
	}
	return k
}

// urlPathEscape percent-encodes everything but unreserved characters and
// "/", as SDKs do for x-amz-copy-source and request paths.
func urlPathEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case 'a' <= ch && ch <= 'z', 'A' <= ch && ch <= 'Z', '0' <= ch && ch <= '9',
			ch == '-', ch == '_', ch == '.', ch == '~', ch == '/':
			b.WriteByte(ch)
		default:
			fmt.Fprintf(&b, "%%%02X", ch)
		}
	}
	return b.String()
}

func readAllClose(t *testing.T, r io.ReadCloser) []byte {
	t.Helper()
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return b
}
