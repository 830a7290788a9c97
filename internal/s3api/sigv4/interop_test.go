package sigv4_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awscreds "github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/facet-sds/facet/internal/s3api/checksum"
	"github.com/facet-sds/facet/internal/s3api/sigv4"
	"github.com/facet-sds/facet/internal/s3err"
)

const (
	interopKey    = "INTEROPKEY"
	interopSecret = "interop/secret+key"
)

// upload is what the interop server stored for one request.
type upload struct {
	mode      string // x-amz-content-sha256 (or the presigned default)
	path      string
	data      []byte
	checksums map[string]string
}

// interopServer plays a minimal S3 PUT/GET endpoint the way the handlers
// are meant to use the two packages: Verify, then checksum.NewReader over
// the verified body.
type interopServer struct {
	mu      sync.Mutex
	uploads []upload
	errs    []string
}

func (s *interopServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v := &sigv4.Verifier{Lookup: func(_ context.Context, ak string) (string, string, error) {
		if ak == interopKey {
			return "t1", interopSecret, nil
		}
		return "", "", s3err.ErrUnknownAccessKey
	}}
	fail := func(err error) {
		s.mu.Lock()
		s.errs = append(s.errs, err.Error())
		s.mu.Unlock()
		s3err.Write(w, r, err, "req-1")
	}
	_, body, err := v.Verify(r)
	if err != nil {
		fail(err)
		return
	}
	spec, err := checksum.ParseHeaders(r.Header)
	if err != nil {
		fail(err)
		return
	}
	cr := checksum.NewReader(body, spec, func(name string) string { return body.Trailer().Get(name) })
	data, err := io.ReadAll(cr)
	if err != nil {
		fail(err)
		return
	}
	mode := r.Header.Get("X-Amz-Content-Sha256")
	if mode == "" {
		mode = "presigned"
	}
	s.mu.Lock()
	s.uploads = append(s.uploads, upload{mode: mode, path: r.URL.EscapedPath(), data: data, checksums: cr.Checksums()})
	s.mu.Unlock()
	w.Header().Set("ETag", `"`+cr.MD5Hex()+`"`)
	for alg, val := range cr.Checksums() {
		w.Header().Set("x-amz-checksum-"+strings.ToLower(alg), val)
	}
	w.WriteHeader(http.StatusOK)
}

func (s *interopServer) last(t *testing.T) upload {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errs) > 0 {
		t.Fatalf("server errors: %v", s.errs)
	}
	if len(s.uploads) == 0 {
		t.Fatal("nothing uploaded")
	}
	return s.uploads[len(s.uploads)-1]
}

func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

// oneShot hides Seek so that clients must stream without knowing a hash.
type oneShot struct{ io.Reader }

func TestInteropAWSSDK(t *testing.T) {
	for _, secure := range []bool{false, true} {
		is := &interopServer{}
		var srv *httptest.Server
		if secure {
			srv = httptest.NewTLSServer(is)
		} else {
			srv = httptest.NewServer(is)
		}
		defer srv.Close()
		client := s3.New(s3.Options{
			Region:       "facet-local",
			Credentials:  awscreds.NewStaticCredentialsProvider(interopKey, interopSecret, ""),
			BaseEndpoint: aws.String(srv.URL),
			UsePathStyle: true,
			HTTPClient:   srv.Client(),
			// What config.LoadDefaultConfig gives: a CRC32 unless told.
			RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
		})
		data := payload(300 << 10)
		for _, tc := range []struct {
			name string
			in   s3.PutObjectInput
		}{
			{"seekable default checksum", s3.PutObjectInput{Body: bytes.NewReader(data)}},
			{"streamed crc64nvme", s3.PutObjectInput{Body: oneShot{bytes.NewReader(data)}, ContentLength: aws.Int64(int64(len(data))),
				ChecksumAlgorithm: s3types.ChecksumAlgorithmCrc64nvme}},
			{"sha256", s3.PutObjectInput{Body: bytes.NewReader(data), ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256}},
			{"empty", s3.PutObjectInput{Body: bytes.NewReader(nil)}},
		} {
			name := tc.name
			if secure {
				name += " tls"
			}
			t.Run(name, func(t *testing.T) {
				if _, ok := tc.in.Body.(oneShot); ok && !secure {
					t.Skip("the SDK streams an unseekable body only over TLS")
				}
				in := tc.in
				in.Bucket, in.Key = aws.String("bucket"), aws.String("dir/ünï cøde+(1).bin")
				out, err := client.PutObject(context.Background(), &in)
				if err != nil {
					t.Fatalf("PutObject: %v", err)
				}
				up := is.last(t)
				want := data
				if strings.HasPrefix(name, "empty") {
					want = nil
				}
				if !bytes.Equal(up.data, want) {
					t.Fatalf("server got %d bytes, want %d (mode %s)", len(up.data), len(want), up.mode)
				}
				if len(up.checksums) != 1 {
					t.Fatalf("mode %s: checksums %v", up.mode, up.checksums)
				}
				t.Logf("mode %s, checksums %v, etag %s", up.mode, up.checksums, aws.ToString(out.ETag))
			})
		}

		t.Run("presigned put", func(t *testing.T) {
			ps, err := s3.NewPresignClient(client).PresignPutObject(context.Background(), &s3.PutObjectInput{
				Bucket: aws.String("bucket"), Key: aws.String("presigned key"),
			}, s3.WithPresignExpires(10*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(ps.Method, ps.URL, bytes.NewReader(data))
			for k, v := range ps.SignedHeader {
				if !strings.EqualFold(k, "host") {
					req.Header[k] = v
				}
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if up := is.last(t); !bytes.Equal(up.data, data) {
				t.Fatalf("server got %d bytes", len(up.data))
			}
		})

		t.Run("wrong secret", func(t *testing.T) {
			bad := s3.New(s3.Options{
				Region: "facet-local", Credentials: awscreds.NewStaticCredentialsProvider(interopKey, "wrong", ""),
				BaseEndpoint: aws.String(srv.URL), UsePathStyle: true, HTTPClient: srv.Client(),
			})
			_, err := bad.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("b"), Key: aws.String("k"), Body: bytes.NewReader(data)})
			var apiErr interface{ ErrorCode() string }
			if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "SignatureDoesNotMatch" {
				t.Fatalf("got %v", err)
			}
			is.mu.Lock()
			is.errs = nil
			is.mu.Unlock()
		})
	}
}

func TestInteropMinio(t *testing.T) {
	data := payload(200<<10 + 17)
	for _, tc := range []struct {
		name     string
		secure   bool
		trailing bool
		opts     minio.PutObjectOptions
		wantMode string
	}{
		{"streaming signature", false, false, minio.PutObjectOptions{}, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"},
		{"streaming signature with md5", false, false, minio.PutObjectOptions{SendContentMd5: true}, ""},
		{"signed trailer", false, true, minio.PutObjectOptions{Checksum: minio.ChecksumCRC32C}, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"},
		{"signed trailer sha256", false, true, minio.PutObjectOptions{Checksum: minio.ChecksumSHA256}, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"},
		{"tls unsigned trailer", true, true, minio.PutObjectOptions{Checksum: minio.ChecksumCRC32}, "STREAMING-UNSIGNED-PAYLOAD-TRAILER"},
		{"tls", true, false, minio.PutObjectOptions{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := &interopServer{}
			var srv *httptest.Server
			if tc.secure {
				srv = httptest.NewTLSServer(is)
			} else {
				srv = httptest.NewServer(is)
			}
			defer srv.Close()
			u, _ := url.Parse(srv.URL)
			client, err := minio.New(u.Host, &minio.Options{
				Creds:           miniocreds.NewStaticV4(interopKey, interopSecret, ""),
				Secure:          tc.secure,
				Region:          "us-east-1",
				Transport:       srv.Client().Transport,
				TrailingHeaders: tc.trailing,
			})
			if err != nil {
				t.Fatal(err)
			}
			opts := tc.opts
			opts.DisableMultipart = true
			if _, err := client.PutObject(context.Background(), "bucket", "a//b/../c d+e", bytes.NewReader(data), int64(len(data)), opts); err != nil {
				t.Fatalf("PutObject: %v", err)
			}
			up := is.last(t)
			if !bytes.Equal(up.data, data) {
				t.Fatalf("server got %d bytes, want %d", len(up.data), len(data))
			}
			if tc.wantMode != "" && up.mode != tc.wantMode {
				t.Fatalf("mode %s, want %s", up.mode, tc.wantMode)
			}
			if tc.opts.Checksum.IsSet() {
				alg := strings.ToUpper(tc.opts.Checksum.String())
				if up.checksums[alg] == "" {
					t.Fatalf("checksums %v, want %s", up.checksums, alg)
				}
			}
			t.Logf("mode %s, checksums %v", up.mode, up.checksums)

			// A presigned URL from the same client.
			pu, err := client.PresignedPutObject(context.Background(), "bucket", "presigned", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodPut, pu.String(), bytes.NewReader(data[:1000]))
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if up := is.last(t); resp.StatusCode != http.StatusOK || !bytes.Equal(up.data, data[:1000]) {
				t.Fatalf("presigned put: status %d, %d bytes", resp.StatusCode, len(up.data))
			}
		})
	}
}

// A signature is bound to its service: a verifier for another service
// (the admin API's) refuses a request signed for S3, header or presigned,
// and accepts one signed for its own; an S3 verifier refuses the other
// service's.
func TestServiceBinding(t *testing.T) {
	lookup := func(_ context.Context, ak string) (string, string, error) {
		if ak == interopKey {
			return "t1", interopSecret, nil
		}
		return "", "", s3err.ErrUnknownAccessKey
	}
	const admin = "facet-admin"
	creds := aws.Credentials{AccessKeyID: interopKey, SecretAccessKey: interopSecret}
	signed := func(service string, presign bool) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9001/v1/trash/t1", nil)
		const empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
		if presign {
			r.URL.RawQuery = "X-Amz-Expires=900" // the S3 presigner's, which the generic one leaves out
			u, _, err := v4.NewSigner().PresignHTTP(context.Background(), creds, r, "UNSIGNED-PAYLOAD", service, "us-east-1", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			r = httptest.NewRequest(http.MethodGet, u, nil)
			return r
		}
		r.Header.Set("X-Amz-Content-Sha256", empty)
		if err := v4.NewSigner().SignHTTP(context.Background(), creds, r, empty, service, "us-east-1", time.Now()); err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, presign := range []bool{false, true} {
		wantCode := s3err.AuthorizationHeaderMalformed
		if presign {
			wantCode = s3err.AuthorizationQueryParametersError
		}
		for _, tc := range []struct {
			verifier, signer string
			ok               bool
		}{{admin, admin, true}, {admin, "s3", false}, {"", admin, false}, {"", "s3", true}} {
			v := &sigv4.Verifier{Lookup: lookup, Service: tc.verifier}
			_, _, err := v.Verify(signed(tc.signer, presign))
			switch {
			case tc.ok && err != nil:
				t.Errorf("presign=%v: verifier %q refused a signature for %q: %v", presign, tc.verifier, tc.signer, err)
			case !tc.ok:
				var se *s3err.Error
				if !errors.As(err, &se) || se.Code != wantCode || !strings.Contains(se.Message, "bound to the API") {
					t.Errorf("presign=%v: verifier %q on a signature for %q: %v; want %s naming the binding", presign, tc.verifier, tc.signer, err, wantCode.Name)
				}
			}
		}
	}
}
