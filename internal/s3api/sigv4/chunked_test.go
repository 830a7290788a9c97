package sigv4

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/s3err"
)

// The example of the AWS documentation "Signature Calculations for the
// Authorization Header: Transferring Payload in Multiple Chunks" and its
// sibling for trailing headers.
const (
	exampleAccessKey = "AKIAIOSFODNN7EXAMPLE"
	exampleSecret    = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	exampleDate      = "20130524T000000Z"
	exampleScope     = "20130524/us-east-1/s3/aws4_request"
)

var exampleTime = time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC)

func exampleVerifier() *Verifier {
	return &Verifier{
		Lookup: func(_ context.Context, ak string) (string, string, error) {
			if ak != exampleAccessKey {
				return "", "", fmt.Errorf("lookup %s: %w", ak, s3err.ErrUnknownAccessKey)
			}
			return "tenant-a", exampleSecret, nil
		},
		Now: func() time.Time { return exampleTime },
	}
}

// testChunker signs aws-chunked streams independently of the code under
// test, straight from the AWS description.
type testChunker struct {
	key         []byte
	date, scope string
	prev        string
}

func newTestChunker(secret, date, scope, seed string) *testChunker {
	mac := func(k []byte, s string) []byte {
		m := hmac.New(sha256.New, k)
		m.Write([]byte(s))
		return m.Sum(nil)
	}
	k := mac([]byte("AWS4"+secret), date[:8])
	region := strings.Split(scope, "/")[1]
	k = mac(mac(mac(k, region), "s3"), "aws4_request")
	return &testChunker{key: k, date: date, scope: scope, prev: seed}
}

func (c *testChunker) sign(kind string, hashes ...string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(strings.Join(append([]string{kind, c.date, c.scope, c.prev}, hashes...), "\n")))
	c.prev = hex.EncodeToString(m.Sum(nil))
	return c.prev
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// chunkSig signs one chunk of data.
func (c *testChunker) chunkSig(data []byte) string {
	return c.sign("AWS4-HMAC-SHA256-PAYLOAD", sha256Hex(nil), sha256Hex(data))
}

// encodeSigned encodes data in signed chunks of chunkSize, then the trailer
// lines (each "name:value") and, if there are any, their signature.
func (c *testChunker) encodeSigned(data []byte, chunkSize int, trailers ...string) []byte {
	var b bytes.Buffer
	for off := 0; off < len(data); off += chunkSize {
		chunk := data[off:min(off+chunkSize, len(data))]
		fmt.Fprintf(&b, "%x;chunk-signature=%s\r\n", len(chunk), c.chunkSig(chunk))
		b.Write(chunk)
		b.WriteString("\r\n")
	}
	fmt.Fprintf(&b, "0;chunk-signature=%s\r\n", c.chunkSig(nil))
	if len(trailers) > 0 {
		var canon string
		for _, t := range trailers {
			b.WriteString(t + "\r\n")
			canon += t + "\n"
		}
		sig := c.sign("AWS4-HMAC-SHA256-TRAILER", sha256Hex([]byte(canon)))
		b.WriteString("x-amz-trailer-signature:" + sig + "\r\n")
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// encodeUnsigned encodes data as STREAMING-UNSIGNED-PAYLOAD-TRAILER does.
func encodeUnsigned(data []byte, chunkSize int, trailers ...string) []byte {
	var b bytes.Buffer
	for off := 0; off < len(data); off += chunkSize {
		chunk := data[off:min(off+chunkSize, len(data))]
		fmt.Fprintf(&b, "%x\r\n", len(chunk))
		b.Write(chunk)
		b.WriteString("\r\n")
	}
	b.WriteString("0\r\n")
	for _, t := range trailers {
		b.WriteString(t + "\r\n")
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

func readAllBody(t *testing.T, b *Body) ([]byte, *s3err.Error) {
	t.Helper()
	got, err := io.ReadAll(b)
	if err == nil {
		return got, nil
	}
	var se *s3err.Error
	if !errors.As(err, &se) {
		t.Fatalf("body error %v is not an *s3err.Error", err)
	}
	return got, se
}

func wantCode(t *testing.T, err error, want s3err.Code) {
	t.Helper()
	var se *s3err.Error
	if !errors.As(err, &se) {
		t.Fatalf("got error %v, want %s", err, want.Name)
	}
	if se.Code != want {
		t.Fatalf("got %s (%v), want %s", se.Code.Name, se, want.Name)
	}
	if strings.Contains(se.Error(), exampleSecret) || strings.Contains(se.Error(), testSecret) {
		t.Fatalf("error leaks the secret: %v", se)
	}
}

// exampleRequest is the documented chunked PUT, without its body.
func exampleRequest(body []byte, seed string, trailer bool) *http.Request {
	r := httptest.NewRequest(http.MethodPut, "http://s3.amazonaws.com/examplebucket/chunkObject.txt", bytes.NewReader(body))
	r.Header.Set("X-Amz-Date", exampleDate)
	r.Header.Set("X-Amz-Storage-Class", "REDUCED_REDUNDANCY")
	r.Header.Set("Content-Encoding", "aws-chunked")
	r.Header.Set("X-Amz-Decoded-Content-Length", "66560")
	signed := "content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class"
	if trailer {
		r.Header.Set("X-Amz-Content-Sha256", streamingSignedTrailer)
		r.Header.Set("X-Amz-Trailer", "x-amz-checksum-crc32c")
		signed = "content-encoding;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class;x-amz-trailer"
	} else {
		r.Header.Set("X-Amz-Content-Sha256", streamingSigned)
	}
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+exampleAccessKey+"/"+exampleScope+
		",SignedHeaders="+signed+",Signature="+seed)
	return r
}

func TestAWSChunkedExample(t *testing.T) {
	const seed = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
	data := bytes.Repeat([]byte{'a'}, 66560)
	c := newTestChunker(exampleSecret, exampleDate, exampleScope, seed)
	if got := c.chunkSig(data[:65536]); got != "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648" {
		t.Fatalf("test chunker disagrees with the AWS example: first chunk signature %s", got)
	}
	c.prev = seed
	enc := c.encodeSigned(data, 65536)
	if len(enc) != 66824 {
		t.Fatalf("encoded length %d, the example says 66824", len(enc))
	}

	id, body, err := exampleVerifier().Verify(exampleRequest(enc, seed, false))
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if id != (Identity{Tenant: "tenant-a", AccessKey: exampleAccessKey}) {
		t.Fatalf("identity %+v", id)
	}
	if body.DecodedLength() != 66560 {
		t.Fatalf("DecodedLength %d", body.DecodedLength())
	}
	got, serr := readAllBody(t, body)
	if serr != nil {
		t.Fatalf("reading body: %v", serr)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("decoded %d bytes, want 66560 'a'", len(got))
	}
	if body.Trailer() != nil {
		t.Fatalf("unexpected trailer %v", body.Trailer())
	}
}

func TestAWSChunkedTrailerExample(t *testing.T) {
	const seed = "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e"
	data := bytes.Repeat([]byte{'a'}, 66560)
	c := newTestChunker(exampleSecret, exampleDate, exampleScope, seed)
	for i, want := range []string{
		"b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2",
		"1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7",
		"2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992",
	} {
		chunk := data[min(i*65536, len(data)):min((i+1)*65536, len(data))]
		if got := c.chunkSig(chunk); got != want {
			t.Fatalf("test chunker disagrees with the AWS example: chunk %d signature %s", i, got)
		}
	}
	// The example's trailer string to sign hashes the canonical trailer to
	// this value. (The trailer signature the page prints, 63bddb24..., does
	// not follow from its own string to sign; no implementation reproduces
	// it, so it is not used.)
	if got := sha256Hex([]byte("x-amz-checksum-crc32c:sOO8/Q==\n")); got != "1e376db7e1a34a8ef1c4bcee131a2d60a1cb62503747488624e10995f448d774" {
		t.Fatalf("canonical trailer hash %s", got)
	}
	c.prev = seed
	enc := c.encodeSigned(data, 65536, "x-amz-checksum-crc32c:sOO8/Q==")
	if len(enc) != 66946 {
		t.Fatalf("encoded length %d, the example says 66946", len(enc))
	}

	_, body, err := exampleVerifier().Verify(exampleRequest(enc, seed, true))
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	got, serr := readAllBody(t, body)
	if serr != nil {
		t.Fatalf("reading body: %v", serr)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("decoded %d bytes", len(got))
	}
	if v := body.Trailer().Get("x-amz-checksum-crc32c"); v != "sOO8/Q==" {
		t.Fatalf("trailer crc32c = %q", v)
	}
}

// TestChunkedTampering alters a valid signed stream in the ways an attacker
// could and checks each is refused with the right code.
func TestChunkedTampering(t *testing.T) {
	const seed = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
	data := bytes.Repeat([]byte{'a'}, 66560)
	enc := newTestChunker(exampleSecret, exampleDate, exampleScope, seed).encodeSigned(data, 65536)
	header1 := bytes.Index(enc, []byte("\r\n")) + 2
	chunk2 := bytes.Index(enc, []byte("400;chunk-signature="))
	final := bytes.LastIndex(enc, []byte("\r\n0;chunk-signature=")) + 2

	flip := func(b []byte, i int) []byte {
		c := bytes.Clone(b)
		c[i] ^= 1
		return c
	}
	cases := []struct {
		name string
		body []byte
		want s3err.Code
	}{
		{"data byte in first chunk", flip(enc, header1+100), s3err.SignatureDoesNotMatch},
		{"data byte in last chunk", flip(enc, chunk2+100), s3err.SignatureDoesNotMatch},
		{"final chunk signature", flip(enc, final+20), s3err.SignatureDoesNotMatch},
		{"chunks swapped", swapChunks(enc, chunk2, final), s3err.SignatureDoesNotMatch},
		{"final chunk dropped", enc[:final], s3err.IncompleteBody},
		{"truncated mid-chunk", enc[:header1+1000], s3err.IncompleteBody},
		{"truncated mid-header", enc[:chunk2+10], s3err.IncompleteBody},
		{"missing CRLF after data", append(bytes.Clone(enc[:chunk2-2]), enc[chunk2:]...), s3err.InvalidRequest},
		{"junk after the final chunk", append(bytes.Clone(enc[:len(enc)-2]), "junk\r\n"...), malformedTrailer},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := exampleRequest(tc.body, seed, false)
			r.ContentLength = int64(len(enc)) // as announced and signed
			_, body, err := exampleVerifier().Verify(r)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			got, serr := readAllBody(t, body)
			if serr == nil {
				t.Fatalf("tampered stream accepted (%d bytes)", len(got))
			}
			wantCode(t, serr, tc.want)
			// The error is sticky: a second read cannot turn into EOF.
			if _, err := body.Read(make([]byte, 10)); err != serr {
				t.Fatalf("second Read returned %v, want the same error", err)
			}
		})
	}
}

// swapChunks exchanges the chunk starting at a (ending at b) with the
// chunk before it, which starts at the first byte.
func swapChunks(enc []byte, a, b int) []byte {
	out := append(bytes.Clone(enc[a:b]), enc[:a]...)
	return append(out, enc[b:]...)
}

func TestChunkedDecodedLength(t *testing.T) {
	data := bytes.Repeat([]byte{'a'}, 66560)
	for _, tc := range []struct {
		announced string
		want      *s3err.Code
	}{
		{"66560", nil},
		{"", nil},
		{"66561", &s3err.IncompleteBody},
		{"66559", &s3err.InvalidRequest},
		{"1", &s3err.InvalidRequest},
		{"-1", &s3err.InvalidArgument},
		{"x", &s3err.InvalidArgument},
	} {
		t.Run(tc.announced, func(t *testing.T) {
			_, body, err := exampleVerifier().Verify(chunkedRequest(data, 65536, tc.announced))
			if tc.want != nil && *tc.want == s3err.InvalidArgument {
				wantCode(t, err, *tc.want)
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			want := int64(-1)
			if tc.announced != "" {
				want, _ = strconv.ParseInt(tc.announced, 10, 64)
			}
			if body.DecodedLength() != want {
				t.Fatalf("DecodedLength %d, want %d", body.DecodedLength(), want)
			}
			got, serr := readAllBody(t, body)
			if tc.want == nil {
				if serr != nil || !bytes.Equal(got, data) {
					t.Fatalf("got %d bytes, %v", len(got), serr)
				}
				return
			}
			wantCode(t, serr, *tc.want)
		})
	}
}

// chunkedRequest is the documented chunked PUT, validly signed for a
// different x-amz-decoded-content-length (removed when empty), carrying data.
func chunkedRequest(data []byte, chunkSize int, decodedLen string) *http.Request {
	zero := strings.Repeat("0", 64)
	placeholder := newTestChunker(exampleSecret, exampleDate, exampleScope, zero).encodeSigned(data, chunkSize)
	r := exampleRequest(placeholder, zero, false)
	r.Header.Del("X-Amz-Decoded-Content-Length")
	if decodedLen != "" {
		r.Header.Set("X-Amz-Decoded-Content-Length", decodedLen)
	}
	resign(r, exampleSecret, exampleTime)
	a, _ := parseAuthorization(r.Header.Get("Authorization"))
	enc := newTestChunker(exampleSecret, exampleDate, exampleScope, a.signature).encodeSigned(data, chunkSize)
	r.Body = io.NopCloser(bytes.NewReader(enc))
	return r
}

// resign recomputes the Authorization header of r in place, keeping its
// signed header list: a legitimate client sending these headers.
func resign(r *http.Request, secret string, now time.Time) {
	a, err := parseAuthorization(r.Header.Get("Authorization"))
	if err != nil {
		panic(err)
	}
	req := &parsedRequest{cred: a.cred, signedHeaders: a.signedHeaders,
		amzDate: now.UTC().Format(amzDateFormat), payload: r.Header.Get("X-Amz-Content-Sha256")}
	sig := req.sign(r, canonicalURI(r), deriveKey(secret, a.cred.date, a.cred.region, a.cred.service))
	r.Header.Set("Authorization", fmt.Sprintf("AWS4-HMAC-SHA256 Credential=%s/%s,SignedHeaders=%s,Signature=%s",
		a.cred.accessKey, a.cred.scope(), strings.Join(a.signedHeaders, ";"), sig))
}

// unsignedRequest builds a STREAMING-UNSIGNED-PAYLOAD-TRAILER PUT signed
// with the example credentials.
func unsignedRequest(t *testing.T, enc []byte, decodedLen, trailer string) *http.Request {
	t.Helper()
	r := httptest.NewRequest(http.MethodPut, "http://s3.amazonaws.com/examplebucket/k", bytes.NewReader(enc))
	r.Header.Set("X-Amz-Date", exampleDate)
	r.Header.Set("Content-Encoding", "aws-chunked")
	r.Header.Set("X-Amz-Content-Sha256", streamingUnsignedTrailer)
	signed := "content-encoding;host;x-amz-content-sha256;x-amz-date"
	if decodedLen != "" {
		r.Header.Set("X-Amz-Decoded-Content-Length", decodedLen)
		signed += ";x-amz-decoded-content-length"
	}
	if trailer != "" {
		r.Header.Set("X-Amz-Trailer", trailer)
		signed += ";x-amz-trailer"
	}
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+exampleAccessKey+"/"+exampleScope+
		",SignedHeaders="+signed+",Signature="+strings.Repeat("0", 64))
	resign(r, exampleSecret, exampleTime)
	return r
}

func TestUnsignedTrailer(t *testing.T) {
	data := []byte(strings.Repeat("hello world ", 1000))
	const crc = "x-amz-checksum-crc32:AAAAAA=="
	cases := []struct {
		name     string
		enc      []byte
		trailer  string
		want     *s3err.Code
		wantTrlr string
	}{
		{"aws sdk format", encodeUnsigned(data, 4096, crc), "x-amz-checksum-crc32", nil, "AAAAAA=="},
		// minio-go ends trailer lines with a bare LF followed by an extra CRLF.
		{"minio-go format", append(encodeUnsigned(data, 4096)[:len(encodeUnsigned(data, 4096))-2],
			crc+"\n\r\n\r\n"...), "x-amz-checksum-crc32", nil, "AAAAAA=="},
		{"no final CRLF", bytes.TrimSuffix(encodeUnsigned(data, 4096, crc), []byte("\r\n")), "x-amz-checksum-crc32", nil, "AAAAAA=="},
		{"no trailers", encodeUnsigned(data, 1000), "", nil, ""},
		{"declared but missing", encodeUnsigned(data, 4096), "x-amz-checksum-crc32", &malformedTrailer, ""},
		{"not declared", encodeUnsigned(data, 4096, crc), "", &malformedTrailer, ""},
		{"declared another", encodeUnsigned(data, 4096, crc), "x-amz-checksum-sha256", &malformedTrailer, ""},
		{"duplicate", encodeUnsigned(data, 4096, crc, crc), "x-amz-checksum-crc32", &malformedTrailer, ""},
		{"signature in unsigned mode", encodeUnsigned(data, 4096, crc, "x-amz-trailer-signature:"+strings.Repeat("a", 64)),
			"x-amz-checksum-crc32", &malformedTrailer, ""},
		{"no colon", encodeUnsigned(data, 4096, "x-amz-checksum-crc32"), "x-amz-checksum-crc32", &malformedTrailer, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, body, err := exampleVerifier().Verify(unsignedRequest(t, tc.enc, strconv.Itoa(len(data)), tc.trailer))
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			got, serr := readAllBody(t, body)
			if tc.want != nil {
				if serr == nil {
					t.Fatal("accepted")
				}
				wantCode(t, serr, *tc.want)
				if body.Trailer() != nil {
					t.Fatal("Trailer() set after a failure")
				}
				return
			}
			if serr != nil {
				t.Fatalf("reading: %v", serr)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("decoded %d bytes, want %d", len(got), len(data))
			}
			if v := body.Trailer().Get("X-Amz-Checksum-Crc32"); v != tc.wantTrlr {
				t.Fatalf("trailer %q, want %q", v, tc.wantTrlr)
			}
		})
	}
}

func TestSignedTrailerTampering(t *testing.T) {
	data := bytes.Repeat([]byte{'a'}, 66560)
	const seed = "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e"
	good := newTestChunker(exampleSecret, exampleDate, exampleScope, seed).encodeSigned(data, 65536, "x-amz-checksum-crc32c:sOO8/Q==")
	// minio-go's layout: LF after the trailer and an empty line before the
	// signature.
	minio := bytes.Replace(good, []byte("sOO8/Q==\r\n"), []byte("sOO8/Q==\n\r\n"), 1)
	cases := []struct {
		name string
		enc  []byte
		want *s3err.Code
	}{
		{"aws layout", good, nil},
		{"minio-go layout", minio, nil},
		{"trailer value changed", bytes.Replace(good, []byte("sOO8/Q=="), []byte("sOO8/Q=A"), 1), &s3err.SignatureDoesNotMatch},
		{"trailer signature missing", bytes.Replace(good, []byte("x-amz-trailer-signature:"), []byte("x-amz-trailer-signaturX:"), 1), &malformedTrailer},
		{"trailer after signature", append(bytes.Clone(good[:len(good)-2]), "x-amz-checksum-crc32c:AAAAAA==\r\n\r\n"...), &malformedTrailer},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, body, err := exampleVerifier().Verify(exampleRequest(tc.enc, seed, true))
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			got, serr := readAllBody(t, body)
			if tc.want == nil {
				if serr != nil {
					t.Fatalf("reading: %v", serr)
				}
				if !bytes.Equal(got, data) || body.Trailer().Get("x-amz-checksum-crc32c") != "sOO8/Q==" {
					t.Fatalf("decoded %d bytes, trailer %v", len(got), body.Trailer())
				}
				return
			}
			if serr == nil {
				t.Fatal("accepted")
			}
			wantCode(t, serr, *tc.want)
		})
	}
}

// TestTrailerSignatureOrder: several trailers may be signed in the order
// sent (minio-go) or sorted (other signers); both verify, nothing else does.
func TestTrailerSignatureOrder(t *testing.T) {
	sent := []string{"x-amz-checksum-sha256:b", "x-amz-checksum-crc32:a"}
	sorted := []string{sent[1], sent[0]}
	seed := strings.Repeat("0", 64)
	for _, tc := range []struct {
		name   string
		signed []string
		ok     bool
	}{
		{"as sent", sent, true},
		{"sorted", sorted, true},
		{"one missing", sent[:1], false},
		{"value changed", []string{sent[0], "x-amz-checksum-crc32:A"}, false},
	} {
		c := newTestChunker(exampleSecret, exampleDate, exampleScope, seed)
		var canon string
		for _, l := range tc.signed {
			canon += l + "\n"
		}
		sig := c.sign("AWS4-HMAC-SHA256-TRAILER", sha256Hex([]byte(canon)))
		s := &chunkSigner{key: deriveKey(exampleSecret, "20130524", "us-east-1", ServiceS3), amzDate: exampleDate, scope: exampleScope, prev: seed}
		if got := s.verifyTrailer(sent, sig); got != tc.ok {
			t.Errorf("%s: verified %v, want %v", tc.name, got, tc.ok)
		}
	}
}

func TestStripAWSChunked(t *testing.T) {
	for in, want := range map[string]string{
		"aws-chunked":       "",
		"aws-chunked,gzip":  "gzip",
		"gzip, aws-chunked": "gzip",
		"gzip":              "gzip",
		"":                  "",
	} {
		if got := StripAWSChunked(in); got != want {
			t.Errorf("StripAWSChunked(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzChunkedDecoder feeds arbitrary bytes to the decoder in every mode: it
// must not panic, must terminate, and must never produce more payload than
// it was given.
func FuzzChunkedDecoder(f *testing.F) {
	data := bytes.Repeat([]byte{'a'}, 300)
	c := newTestChunker(exampleSecret, exampleDate, exampleScope, strings.Repeat("0", 64))
	f.Add(c.encodeSigned(data, 100), uint8(0))
	c.prev = strings.Repeat("0", 64)
	f.Add(c.encodeSigned(data, 128, "x-amz-checksum-crc32:AAAAAA=="), uint8(1))
	f.Add(encodeUnsigned(data, 7, "x-amz-checksum-crc32:AAAAAA=="), uint8(2))
	f.Add([]byte("0\r\n\r\n"), uint8(2))
	f.Add([]byte("fffffffffffffff\r\nabc"), uint8(2))
	f.Add([]byte("3\r\nabc\r\n0\r\n\r\n\r\n\r\n"), uint8(2))
	f.Add([]byte("1;chunk-signature=zz\r\na\r\n"), uint8(0))
	f.Fuzz(func(t *testing.T, in []byte, mode uint8) {
		d := &chunkDecoder{limit: -1, declared: []string{"x-amz-checksum-crc32"}}
		if mode&4 != 0 {
			d.limit = int64(len(in) / 2)
		}
		d.init(bytes.NewReader(in))
		switch mode % 3 {
		case 0:
			d.signer = &chunkSigner{key: deriveKey(exampleSecret, "20130524", "us-east-1", ServiceS3),
				amzDate: exampleDate, scope: exampleScope, prev: strings.Repeat("0", 64)}
		case 1:
			d.signer = &chunkSigner{key: deriveKey(exampleSecret, "20130524", "us-east-1", ServiceS3),
				amzDate: exampleDate, scope: exampleScope, prev: strings.Repeat("0", 64)}
			d.trailers = trailerSigned
		case 2:
			d.trailers = trailerUnsigned
		}
		buf := make([]byte, 1+int(mode)%61)
		var out int
		// Every Read consumes input or ends, so len(in)+2 calls suffice.
		for i := 0; i <= len(in)+2; i++ {
			n, err := d.Read(buf)
			out += n
			if out > len(in) {
				t.Fatalf("decoded %d bytes from %d", out, len(in))
			}
			if err == io.EOF {
				return
			}
			if err != nil {
				var se *s3err.Error
				if !errors.As(err, &se) {
					t.Fatalf("non-S3 error %v", err)
				}
				return
			}
			if n == 0 {
				t.Fatal("Read returned 0, nil")
			}
		}
		t.Fatalf("decoder did not finish after %d reads of a %d-byte input", len(in)+3, len(in))
	})
}
