package sigv4

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/facet-sds/facet/internal/s3err"
)

const (
	testAccessKey = "FACETTESTKEY0000001"
	testSecret    = "facet-test-secret/with+odd=chars"
	testRegion    = "eu-facet-1" // any region string is accepted
)

// sdkSigner signs as the S3 clients do: the path is not escaped a second
// time. A new one each time, as the SDK caches keys by access key alone.
func sdkSigner() *v4.Signer {
	return v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
}

func testCreds(secret string) aws.Credentials {
	return aws.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: secret}
}

// clock is a settable Verifier.Now.
type clock struct{ t atomic.Pointer[time.Time] }

func (c *clock) now() time.Time   { return *c.t.Load() }
func (c *clock) set(t time.Time)  { c.t.Store(&t) }
func newClock(t time.Time) *clock { c := &clock{}; c.set(t); return c }

func testVerifier(c *clock) *Verifier {
	return &Verifier{
		Lookup: func(_ context.Context, ak string) (string, string, error) {
			switch ak {
			case testAccessKey:
				return "tenant-t", testSecret, nil
			case "BROKENSTORE":
				return "", "", errors.New("metadata store unavailable")
			}
			return "", "", s3err.ErrUnknownAccessKey
		},
		Now: c.now,
	}
}

// outcome is what the test server saw, sent back as JSON.
type outcome struct {
	Code, Message string
	Path          string // the raw path the server saw
	Tenant        string
	Body          []byte
	Trailer       http.Header
	DecodedLength int64
}

// newServer runs Verify behind a real HTTP server, so that the request is
// the one net/http hands a handler (raw path, moved headers and all).
func newServer(t *testing.T, v *Verifier) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o := outcome{Path: r.URL.EscapedPath()}
		id, body, err := v.Verify(r)
		if err == nil {
			o.Tenant, o.DecodedLength = id.Tenant, body.DecodedLength()
			o.Body, err = io.ReadAll(body)
			o.Trailer = body.Trailer()
		}
		if err != nil {
			se := s3err.As(err)
			o.Code, o.Message = se.Code.Name, se.Error()
		}
		_ = json.NewEncoder(w).Encode(o)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, req *http.Request) outcome {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	defer resp.Body.Close()
	var o outcome
	if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
		t.Fatalf("decoding outcome: %v", err)
	}
	if strings.Contains(o.Message, testSecret) {
		t.Fatalf("error leaks the secret: %s", o.Message)
	}
	return o
}

// newRequest builds a request whose path and query are sent byte for byte.
func newRequest(t *testing.T, method, base, rawPath, rawQuery string, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, base, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if req.URL.Path, err = url.PathUnescape(rawPath); err != nil {
		t.Fatal(err)
	}
	req.URL.RawPath = rawPath
	req.URL.RawQuery = rawQuery
	return req
}

func signReq(t *testing.T, req *http.Request, secret, payloadHash string, at time.Time) {
	t.Helper()
	req.Header.Set("X-Amz-Content-Sha256", payloadHash)
	if err := sdkSigner().SignHTTP(context.Background(), testCreds(secret), req, payloadHash, "s3", testRegion, at); err != nil {
		t.Fatal(err)
	}
}

func TestHeaderAuthHostilePaths(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	srv := newServer(t, testVerifier(newClock(now)))
	body := []byte("payload bytes")
	paths := []string{
		"/",
		"/b",
		"/b/a//b",
		"/b/../x",
		"/b/./x/",
		"/b/" + uriEncode("ünïcødé ké¥ (1).txt", false),
		"/b/" + uriEncode("plus+percent%&amp;=;:@$,", false),
		"/b/a%2Fb",
		"/b/sp%20ace",
		"/b/raw+plus",
		"/b/tilde~dot.dash-under_score",
	}
	for _, p := range paths {
		t.Run(p, func(t *testing.T) {
			req := newRequest(t, http.MethodPut, srv.URL, p, "", body)
			req.Header.Set("Content-Type", "text/plain")
			signReq(t, req, testSecret, sha256Hex(body), now)
			o := do(t, req)
			if o.Code != "" {
				t.Fatalf("%s: %s", o.Code, o.Message)
			}
			if o.Path != p {
				t.Fatalf("server saw path %q, sent %q", o.Path, p)
			}
			if o.Tenant != "tenant-t" || !bytes.Equal(o.Body, body) || o.DecodedLength != int64(len(body)) {
				t.Fatalf("outcome %+v", o)
			}
		})
	}
}

// TestUnescapedPathFallback: a client that signs the SDK encoding of a path
// but sends some characters unescaped is accepted, as by S3.
func TestUnescapedPathFallback(t *testing.T) {
	now := time.Now().UTC()
	srv := newServer(t, testVerifier(newClock(now)))
	req := newRequest(t, http.MethodGet, srv.URL, "/b/a%21b%28c%29", "", nil)
	signReq(t, req, testSecret, emptySHA256, now)
	req.URL.RawPath = "/b/a!b(c)"
	if o := do(t, req); o.Code != "" {
		t.Fatalf("%s: %s", o.Code, o.Message)
	}
}

func TestHeaderAuthQueryAndHeaders(t *testing.T) {
	now := time.Now().UTC()
	srv := newServer(t, testVerifier(newClock(now)))
	queries := []string{
		"list-type=2&prefix=a%20b%2Bc&delimiter=%2F&encoding-type=url",
		"acl",
		"uploads&max-uploads=3",
		"x=2&x=1&x=10&X=0",
		"marker=%E2%9C%93&empty=&a-b=a%2Fb&a=a-b",
		"spaces=a+b", // '+' means space in a query, and is signed as %20
		"tagging&versionId=null",
	}
	for _, q := range queries {
		t.Run(q, func(t *testing.T) {
			req := newRequest(t, http.MethodGet, srv.URL, "/bucket/key", q, nil)
			req.Header.Add("X-Amz-Meta-Multi", "one")
			req.Header.Add("X-Amz-Meta-Multi", "two")
			req.Header.Set("X-Amz-Meta-Spaces", "  a   b  c ")
			req.Header.Set("Range", "bytes=0-9")
			signReq(t, req, testSecret, emptySHA256, now)
			// The SDK sends its canonical query; put back what a less tidy
			// client would send for the same parameters.
			req.URL.RawQuery = q
			if o := do(t, req); o.Code != "" {
				t.Fatalf("%s: %s", o.Code, o.Message)
			}
		})
	}
}

func TestHeaderAuthTampering(t *testing.T) {
	now := time.Now().UTC()
	srv := newServer(t, testVerifier(newClock(now)))
	body := []byte("the original body")
	build := func(secret string) *http.Request {
		req := newRequest(t, http.MethodPut, srv.URL, "/bucket/a//key", "partNumber=1&uploadId=u", body)
		req.Header.Set("X-Amz-Meta-Owner", "alice")
		signReq(t, req, secret, sha256Hex(body), now)
		return req
	}
	cases := []struct {
		name   string
		tamper func(r *http.Request)
		secret string
		want   s3err.Code
	}{
		{"path", func(r *http.Request) { r.URL.Path, r.URL.RawPath = "/bucket/a/key", "" }, testSecret, s3err.SignatureDoesNotMatch},
		{"path normalised", func(r *http.Request) { r.URL.Path, r.URL.RawPath = "/bucket/a/./key", "" }, testSecret, s3err.SignatureDoesNotMatch},
		{"query", func(r *http.Request) { r.URL.RawQuery = "partNumber=2&uploadId=u" }, testSecret, s3err.SignatureDoesNotMatch},
		{"query added", func(r *http.Request) { r.URL.RawQuery += "&acl" }, testSecret, s3err.SignatureDoesNotMatch},
		{"signed header", func(r *http.Request) { r.Header.Set("X-Amz-Meta-Owner", "mallory") }, testSecret, s3err.SignatureDoesNotMatch},
		{"host", func(r *http.Request) { r.Host = "evil.example:80" }, testSecret, s3err.SignatureDoesNotMatch},
		{"method", func(r *http.Request) { r.Method = http.MethodPost }, testSecret, s3err.SignatureDoesNotMatch},
		{"unsigned amz header", func(r *http.Request) { r.Header.Set("X-Amz-Copy-Source", "/other/secret") }, testSecret, s3err.AccessDenied},
		{"wrong secret", func(*http.Request) {}, "not-the-secret", s3err.SignatureDoesNotMatch},
		{"body", func(r *http.Request) {
			r.Body = io.NopCloser(bytes.NewReader([]byte("the forged   body")))
		}, testSecret, s3err.XAmzContentSHA256Mismatch},
		{"short body", func(r *http.Request) {
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body[:5])), 5
			r.Header.Del("Content-Length")
		}, testSecret, s3err.SignatureDoesNotMatch}, // content-length is signed
		{"payload hash", func(r *http.Request) { r.Header.Set("X-Amz-Content-Sha256", unsignedPayload) }, testSecret, s3err.SignatureDoesNotMatch},
		{"access key", func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), testAccessKey, "NOSUCHKEY", 1))
		}, testSecret, s3err.InvalidAccessKeyID},
		{"store down", func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), testAccessKey, "BROKENSTORE", 1))
		}, testSecret, s3err.InternalError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := build(tc.secret)
			tc.tamper(req)
			o := do(t, req)
			if o.Code != tc.want.Name {
				t.Fatalf("got %q (%s), want %s", o.Code, o.Message, tc.want.Name)
			}
		})
	}
	// And the untampered request passes, so the cases above fail for
	// their tampering alone.
	if o := do(t, build(testSecret)); o.Code != "" || string(o.Body) != string(body) {
		t.Fatalf("untampered: %+v", o)
	}
}

func TestClockSkew(t *testing.T) {
	signed := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	c := newClock(signed)
	srv := newServer(t, testVerifier(c))
	for _, tc := range []struct {
		offset time.Duration
		want   string
	}{
		{0, ""},
		{14 * time.Minute, ""},
		{-14 * time.Minute, ""},
		{16 * time.Minute, "RequestTimeTooSkewed"},
		{-16 * time.Minute, "RequestTimeTooSkewed"},
		{48 * time.Hour, "RequestTimeTooSkewed"},
	} {
		c.set(signed.Add(tc.offset))
		req := newRequest(t, http.MethodGet, srv.URL, "/b/k", "", nil)
		signReq(t, req, testSecret, emptySHA256, signed)
		if o := do(t, req); o.Code != tc.want {
			t.Errorf("server clock %v off: got %q (%s), want %q", tc.offset, o.Code, o.Message, tc.want)
		}
	}
}

func presign(t *testing.T, method, base, path, query string, at time.Time, expires string) string {
	t.Helper()
	req := newRequest(t, method, base, path, query, nil)
	if expires != "" {
		if req.URL.RawQuery != "" {
			req.URL.RawQuery += "&"
		}
		req.URL.RawQuery += "X-Amz-Expires=" + expires
	}
	u, _, err := sdkSigner().PresignHTTP(context.Background(), testCreds(testSecret), req, unsignedPayload, "s3", testRegion, at)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestPresigned(t *testing.T) {
	signed := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	c := newClock(signed)
	srv := newServer(t, testVerifier(c))
	get := func(u string) outcome {
		req, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		return do(t, req)
	}
	path := "/b/" + uriEncode("dir/ünï cøde+%.txt", false)

	u := presign(t, http.MethodGet, srv.URL, path, "response-content-type=text%2Fplain", signed, "3600")
	for _, tc := range []struct {
		name    string
		now     time.Time
		url     string
		code    string
		message string
	}{
		{"valid", signed.Add(time.Minute), u, "", ""},
		{"last second", signed.Add(3600 * time.Second), u, "", ""},
		{"expired", signed.Add(3601 * time.Second), u, "AccessDenied", "Request has expired"},
		{"not yet valid", signed.Add(-20 * time.Minute), u, "AccessDenied", "not valid yet"},
		{"small skew", signed.Add(-10 * time.Minute), u, "", ""},
		{"expiry extended", signed.Add(time.Minute), strings.Replace(u, "X-Amz-Expires=3600", "X-Amz-Expires=7200", 1), "SignatureDoesNotMatch", ""},
		{"query tampered", signed.Add(time.Minute), strings.Replace(u, "text%2Fplain", "text%2Fhtml", 1), "SignatureDoesNotMatch", ""},
		{"query added", signed.Add(time.Minute), u + "&acl", "SignatureDoesNotMatch", ""},
		{"signature removed", signed.Add(time.Minute), u[:strings.Index(u, "&X-Amz-Signature")], "AuthorizationQueryParametersError", ""},
		{"algorithm", signed.Add(time.Minute), strings.Replace(u, "AWS4-HMAC-SHA256", "AWS4-HMAC-SHA1", 1), "AuthorizationQueryParametersError", ""},
		{"week plus one", signed, presign(t, http.MethodGet, srv.URL, path, "", signed, "604801"), "AuthorizationQueryParametersError", ""},
		{"zero", signed, presign(t, http.MethodGet, srv.URL, path, "", signed, "0"), "AuthorizationQueryParametersError", ""},
		{"no expiry", signed, presign(t, http.MethodGet, srv.URL, path, "", signed, ""), "AuthorizationQueryParametersError", ""},
		{"a week", signed.Add(6 * 24 * time.Hour), presign(t, http.MethodGet, srv.URL, path, "", signed, "604800"), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.set(tc.now)
			o := get(tc.url)
			if o.Code != tc.code || !strings.Contains(o.Message, tc.message) {
				t.Fatalf("got %q (%s), want %q %q", o.Code, o.Message, tc.code, tc.message)
			}
		})
	}

	t.Run("put with body", func(t *testing.T) {
		c.set(signed)
		u := presign(t, http.MethodPut, srv.URL, "/b/upload", "", signed, "60")
		req, _ := http.NewRequest(http.MethodPut, u, strings.NewReader("uploaded via presigned url"))
		o := do(t, req)
		if o.Code != "" || string(o.Body) != "uploaded via presigned url" {
			t.Fatalf("%+v", o)
		}
		req, _ = http.NewRequest(http.MethodPut, u, nil)
		req.Header.Set("X-Amz-Meta-Injected", "1")
		if o := do(t, req); o.Code != "AccessDenied" {
			t.Fatalf("unsigned x-amz header: got %q", o.Code)
		}
		req, _ = http.NewRequest(http.MethodPut, u, nil)
		req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=x")
		if o := do(t, req); o.Code != "InvalidArgument" {
			t.Fatalf("two mechanisms: got %q", o.Code)
		}
	})
}

// TestRequestErrors covers requests rejected before any signature is
// computed.
func TestRequestErrors(t *testing.T) {
	v := exampleVerifier()
	cred := "Credential=" + exampleAccessKey + "/" + exampleScope
	sig := "Signature=" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name    string
		authz   string
		headers map[string]string
		query   string
		want    s3err.Code
	}{
		{"anonymous", "", nil, "", s3err.AccessDenied},
		{"sigv2 header", "AWS " + exampleAccessKey + ":c2lnbmF0dXJl", nil, "", s3err.InvalidRequest},
		{"sigv2 query", "", nil, "AWSAccessKeyId=a&Signature=b&Expires=1", s3err.InvalidRequest},
		{"sigv4a", "AWS4-ECDSA-P256-SHA256 " + cred + ",SignedHeaders=host," + sig, nil, "", s3err.InvalidRequest},
		{"no components", "AWS4-HMAC-SHA256", nil, "", s3err.AuthorizationHeaderMalformed},
		{"missing signature", "AWS4-HMAC-SHA256 " + cred + ",SignedHeaders=host", nil, "", s3err.AuthorizationHeaderMalformed},
		{"short signature", "AWS4-HMAC-SHA256 " + cred + ",SignedHeaders=host,Signature=abc", nil, "", s3err.AuthorizationHeaderMalformed},
		{"host not signed", "AWS4-HMAC-SHA256 " + cred + ",SignedHeaders=x-amz-date," + sig, nil, "", s3err.AuthorizationHeaderMalformed},
		{"wrong service", "AWS4-HMAC-SHA256 Credential=" + exampleAccessKey + "/20130524/us-east-1/iam/aws4_request,SignedHeaders=host," + sig, nil, "", s3err.AuthorizationHeaderMalformed},
		{"bad scope date", "AWS4-HMAC-SHA256 Credential=" + exampleAccessKey + "/2013-05-24/us-east-1/s3/aws4_request,SignedHeaders=host," + sig, nil, "", s3err.AuthorizationHeaderMalformed},
		{"scope date differs", "AWS4-HMAC-SHA256 Credential=" + exampleAccessKey + "/20130525/us-east-1/s3/aws4_request,SignedHeaders=host," + sig, nil, "", s3err.AuthorizationHeaderMalformed},
		{"no date", "AWS4-HMAC-SHA256 " + cred + ",SignedHeaders=host," + sig, map[string]string{"X-Amz-Date": ""}, "", s3err.AccessDenied},
		{"bad date", "AWS4-HMAC-SHA256 " + cred + ",SignedHeaders=host," + sig, map[string]string{"X-Amz-Date": "2013-05-24"}, "", s3err.AccessDenied},
		{"no payload hash", "AWS4-HMAC-SHA256 " + cred + ",SignedHeaders=host," + sig, map[string]string{"X-Amz-Content-Sha256": ""}, "", s3err.InvalidRequest},
		{"bad payload hash", "AWS4-HMAC-SHA256 " + cred + ",SignedHeaders=host," + sig, map[string]string{"X-Amz-Content-Sha256": "abc"}, "", s3err.InvalidArgument},
		{"sigv4a payload", "AWS4-HMAC-SHA256 " + cred + ",SignedHeaders=host," + sig, map[string]string{"X-Amz-Content-Sha256": "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD"}, "", s3err.NotImplemented},
		{"unsigned amz header", "AWS4-HMAC-SHA256 " + cred + ",SignedHeaders=host," + sig, map[string]string{"X-Amz-Acl": "public-read"}, "", s3err.AccessDenied},
		{"wrong signature", "AWS4-HMAC-SHA256 " + cred + ",SignedHeaders=host;x-amz-content-sha256;x-amz-date," + sig, nil, "", s3err.SignatureDoesNotMatch},
		{"unknown key", "AWS4-HMAC-SHA256 Credential=NOPE/" + exampleScope + ",SignedHeaders=host;x-amz-content-sha256;x-amz-date," + sig, nil, "", s3err.InvalidAccessKeyID},
		{"both mechanisms", "AWS4-HMAC-SHA256 " + cred + ",SignedHeaders=host," + sig, nil, "X-Amz-Algorithm=AWS4-HMAC-SHA256", s3err.InvalidArgument},
		{"presign missing params", "", nil, "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=" + strings.Repeat("ab", 32), s3err.AuthorizationQueryParametersError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "http://s3.amazonaws.com/b/k?"+tc.query, nil)
			r.Header.Set("X-Amz-Date", exampleDate)
			r.Header.Set("X-Amz-Content-Sha256", emptySHA256)
			for k, v := range tc.headers {
				if v == "" {
					r.Header.Del(k)
				} else {
					r.Header.Set(k, v)
				}
			}
			if tc.authz != "" {
				r.Header.Set("Authorization", tc.authz)
			}
			_, body, err := v.Verify(r)
			if body != nil {
				t.Fatal("a body was returned with an error")
			}
			wantCode(t, err, tc.want)
		})
	}
}

func TestDateHeaderInsteadOfXAmzDate(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "http://s3.amazonaws.com/b/k", nil)
	r.Header.Set("Date", exampleTime.Format(http.TimeFormat))
	r.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+exampleAccessKey+"/"+exampleScope+
		", SignedHeaders=date;host;x-amz-content-sha256, Signature="+strings.Repeat("0", 64))
	resign(r, exampleSecret, exampleTime)
	if _, _, err := exampleVerifier().Verify(r); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	r.Header.Set("Date", exampleTime.Add(time.Second).Format(http.TimeFormat))
	_, _, err := exampleVerifier().Verify(r)
	wantCode(t, err, s3err.SignatureDoesNotMatch)

	// An unsigned Date would make the request replayable forever.
	r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "date;host", "host", 1))
	resign(r, exampleSecret, exampleTime)
	_, _, err = exampleVerifier().Verify(r)
	wantCode(t, err, s3err.AuthorizationHeaderMalformed)
}

func TestSigningKeyCache(t *testing.T) {
	v := &Verifier{}
	for i := range maxCachedKeys + 100 {
		date := fmt.Sprintf("2025%04d", i)
		if got, want := v.signingKey("secret", date, "r", ServiceS3), deriveKey("secret", date, "r", ServiceS3); !bytes.Equal(got, want) {
			t.Fatalf("key %d differs from its derivation", i)
		}
	}
	if len(v.keys) > maxCachedKeys {
		t.Fatalf("cache holds %d keys, bound is %d", len(v.keys), maxCachedKeys)
	}
	// A rotated secret must not be served the old key.
	if bytes.Equal(v.signingKey("old", "20250101", "r", ServiceS3), v.signingKey("new", "20250101", "r", ServiceS3)) {
		t.Fatal("cache ignores the secret")
	}
}

// FuzzParseAuthorization: any header either fails to parse or yields
// well-formed parts that survive a round trip.
func FuzzParseAuthorization(f *testing.F) {
	f.Add("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-date, Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024")
	f.Add("AWS4-HMAC-SHA256 Credential=a/20130524/r/s3/aws4_request,SignedHeaders=host,Signature=" + strings.Repeat("F", 64))
	f.Add("AWS4-HMAC-SHA256 Signature=x, Signature=y")
	f.Add("AWS4-HMAC-SHA256 ,,,=,")
	f.Add("AWS AKID:sig")
	f.Add("Signature=0")
	f.Add("AWS4-HMAC-SHA256 SignedHeaders=" + strings.Repeat("X", 1000))
	f.Add("AWS4-HMAC-SHA256 Credential=//////,SignedHeaders=;;,Signature=")
	f.Fuzz(func(t *testing.T, h string) {
		a, err := parseAuthorization(h)
		if err != nil {
			// Errors quote bits of the header for the log, never all of it.
			if len(err.Error()) > 400 {
				t.Fatalf("error of %d bytes: %v", len(err.Error()), err)
			}
			return
		}
		if !isHex(a.signature, 64) || a.signature != strings.ToLower(a.signature) {
			t.Fatalf("signature %q", a.signature)
		}
		if a.cred.accessKey == "" || a.cred.region == "" || a.cred.service == "" || len(a.cred.date) != 8 {
			t.Fatalf("credential %+v", a.cred)
		}
		hasHost := false
		for _, n := range a.signedHeaders {
			if n == "" || n != strings.ToLower(n) {
				t.Fatalf("signed header %q", n)
			}
			hasHost = hasHost || n == "host"
		}
		if !hasHost {
			t.Fatal("host not signed")
		}
		again, err := parseAuthorization(fmt.Sprintf("AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s",
			a.cred.accessKey, a.cred.scope(), strings.Join(a.signedHeaders, ";"), a.signature))
		if err != nil || again.cred != a.cred || again.signature != a.signature ||
			strings.Join(again.signedHeaders, ";") != strings.Join(a.signedHeaders, ";") {
			t.Fatalf("round trip: %+v, %v", again, err)
		}
	})
}
