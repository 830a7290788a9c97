package e2e

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	miniosigner "github.com/minio/minio-go/v7/pkg/signer"
)

func TestMalformedXML(t *testing.T) {
	srv := startServer(t, t.TempDir())
	c := srv.createTenant(t, "alice")
	a := srv.sdk(c)
	ctx := ctxT(t)
	mkBucket(t, a, "xml")
	putBytes(t, a, "xml", "a", []byte("keep me"))

	deleteBodies := map[string]string{
		"truncated":      `<Delete><Object><Key>a</Key></Object>`,
		"not xml":        `this is not xml`,
		"wrong root":     `<Remove><Object><Key>a</Key></Object></Remove>`,
		"empty":          ``,
		"no objects":     `<Delete></Delete>`,
		"mismatched tag": `<Delete><Object><Key>a</Object></Key></Delete>`,
	}
	for name, body := range deleteBodies {
		st, code, rb := srv.doRaw(t, c, http.MethodPost, "/xml?delete", []byte(body), http.Header{"Content-Md5": {md5b64([]byte(body))}})
		wantRaw(t, "DeleteObjects "+name, st, code, rb, http.StatusBadRequest, "MalformedXML")
	}
	var many strings.Builder
	many.WriteString("<Delete>")
	for i := range 1001 {
		fmt.Fprintf(&many, "<Object><Key>k%d</Key></Object>", i)
	}
	many.WriteString("<Object><Key>a</Key></Object></Delete>")
	st, code, rb := srv.doRaw(t, c, http.MethodPost, "/xml?delete", []byte(many.String()), http.Header{"Content-Md5": {md5b64([]byte(many.String()))}})
	wantRaw(t, "DeleteObjects of 1002 keys", st, code, rb, http.StatusBadRequest, "MalformedXML")
	assertContent(t, a, "xml", "a", []byte("keep me"))

	// CompleteMultipartUpload.
	mp, err := a.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("xml"), Key: aws.String("mp")})
	if err != nil {
		t.Fatal(err)
	}
	part, err := a.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("xml"), Key: aws.String("mp"), UploadId: mp.UploadId, PartNumber: aws.Int32(1), Body: strings.NewReader("only part")})
	if err != nil {
		t.Fatal(err)
	}
	completeBodies := map[string]string{
		"truncated":  `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>` + aws.ToString(part.ETag) + `</ETag></Part>`,
		"not xml":    `{"parts": [1]}`,
		"no parts":   `<CompleteMultipartUpload></CompleteMultipartUpload>`,
		"empty":      ``,
		"bad number": `<CompleteMultipartUpload><Part><PartNumber>one</PartNumber><ETag>` + aws.ToString(part.ETag) + `</ETag></Part></CompleteMultipartUpload>`,
	}
	for name, body := range completeBodies {
		st, code, rb := srv.doRaw(t, c, http.MethodPost, "/xml/mp?uploadId="+aws.ToString(mp.UploadId), []byte(body), nil)
		wantRaw(t, "CompleteMultipartUpload "+name, st, code, rb, http.StatusBadRequest, "MalformedXML")
	}
	assertAbsent(t, a, "xml", "mp")
	parts, err := a.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("xml"), Key: aws.String("mp"), UploadId: mp.UploadId})
	if err != nil {
		t.Fatalf("after malformed completes, ListParts: %v; want the upload intact", err)
	}
	if len(parts.Parts) != 1 {
		t.Errorf("after malformed completes, %d parts; want 1", len(parts.Parts))
	}
	// The upload still completes normally.
	if _, err := a.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("xml"), Key: aws.String("mp"), UploadId: mp.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: part.ETag}}}}); err != nil {
		t.Errorf("CompleteMultipartUpload after malformed attempts: %v", err)
	}
	assertContent(t, a, "xml", "mp", []byte("only part"))
}

func TestMetadataTooLarge(t *testing.T) {
	srv := startServer(t, t.TempDir())
	a := srv.sdk(srv.createTenant(t, "alice"))
	ctx := ctxT(t)
	mkBucket(t, a, "meta")
	putBytes(t, a, "meta", "existing", []byte("old"))
	big := map[string]string{"big": strings.Repeat("v", 2100)}
	split := map[string]string{"one": strings.Repeat("v", 1100), "two": strings.Repeat("w", 1100)}
	for _, key := range []string{"new", "existing"} {
		for name, md := range map[string]map[string]string{"one 2100-byte value": big, "two 1100-byte values": split} {
			_, err := a.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("meta"), Key: aws.String(key), Body: strings.NewReader("new"), Metadata: md})
			wantErr(t, "PutObject "+key+" with "+name, err, "MetadataTooLarge", http.StatusBadRequest)
		}
		_, err := a.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("meta"), Key: aws.String(key), Metadata: big})
		wantErr(t, "CreateMultipartUpload with big metadata", err, "MetadataTooLarge", http.StatusBadRequest)
		_, err = a.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("meta"), Key: aws.String(key), CopySource: aws.String("meta/existing"), MetadataDirective: types.MetadataDirectiveReplace, Metadata: big})
		wantErr(t, "CopyObject REPLACE with big metadata", err, "MetadataTooLarge", http.StatusBadRequest)
	}
	assertAbsent(t, a, "meta", "new")
	assertContent(t, a, "meta", "existing", []byte("old"))
	if ups, err := a.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("meta")}); err != nil || len(ups.Uploads) != 0 {
		t.Errorf("ListMultipartUploads after rejected creates: %v; want none", err)
	}
	// Comfortably under the limit is fine.
	ok := map[string]string{"k": strings.Repeat("v", 1800)}
	if _, err := a.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("meta"), Key: aws.String("ok"), Body: strings.NewReader("x"), Metadata: ok}); err != nil {
		t.Errorf("PutObject with 1.8 KB metadata: %v", err)
	}
	head, err := a.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("meta"), Key: aws.String("ok")})
	if err != nil || head.Metadata["k"] != ok["k"] {
		t.Errorf("HeadObject after 1.8 KB metadata: %v", err)
	}
}

// rawExchange writes a signed request's head and the given body bytes on a
// fresh connection, half-closes it, and reads one response. Content-Length
// is whatever req.ContentLength says, whatever the body holds.
func rawExchange(t *testing.T, req *http.Request, body []byte) (int, string, []byte) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", req.URL.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var head bytes.Buffer
	fmt.Fprintf(&head, "%s %s HTTP/1.1\r\nHost: %s\r\n", req.Method, req.URL.RequestURI(), req.URL.Host)
	for k, vs := range req.Header {
		for _, v := range vs {
			fmt.Fprintf(&head, "%s: %s\r\n", k, v)
		}
	}
	fmt.Fprintf(&head, "Content-Length: %d\r\nConnection: close\r\n\r\n", req.ContentLength)
	if _, err := conn.Write(head.Bytes()); err != nil {
		t.Fatal(err)
	}
	// The server may answer and close before reading everything; that is fine.
	_, _ = conn.Write(body)
	_ = conn.(*net.TCPConn).CloseWrite()
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return 0, "", []byte(err.Error())
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, xmlErrCode(rb), rb
}

// signedPut builds a signed PUT of key whose Content-Length is declared.
func (s *server) signedPut(t *testing.T, c creds, path string, declared int64, payloadHash string, hdr http.Header) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, s.endpoint()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = declared
	for k, v := range hdr {
		req.Header[k] = v
	}
	sign(t, req, c, payloadHash, time.Now())
	return req
}

// waitNoTempFiles waits (bounded) until the data directory holds no temp
// files, which a failed write must not leave behind.
func waitNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := dataFiles(t, dir, ".tmp")
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("temp files left after failed writes: %q", left)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestTruncatedAndMislabelledBodies(t *testing.T) {
	dataDir := t.TempDir()
	srv := startServer(t, dataDir)
	c := srv.createTenant(t, "alice")
	a := srv.sdk(c)
	mkBucket(t, a, "trunc")
	old := pattern("old", 5000)
	putBytes(t, a, "trunc", "existing", old)
	full := pattern("full", 200_000)

	for _, key := range []string{"new", "existing"} {
		// Fewer bytes than Content-Length, then EOF: unsigned and signed payloads.
		req := srv.signedPut(t, c, "/trunc/"+key, int64(len(full)), "UNSIGNED-PAYLOAD", nil)
		st, code, rb := rawExchange(t, req, full[:len(full)/2])
		if st == http.StatusOK {
			t.Errorf("truncated UNSIGNED-PAYLOAD PUT %s: 200; want an error (%s %s)", key, code, rb)
		}
		req = srv.signedPut(t, c, "/trunc/"+key, int64(len(full)), sha256hex(full), nil)
		st, code, rb = rawExchange(t, req, full[:len(full)-1])
		if st == http.StatusOK {
			t.Errorf("truncated signed PUT %s: 200; want an error (%s %s)", key, code, rb)
		}
		// Content-Length shorter than the body that was hashed: the server
		// reads Content-Length bytes, which do not match the signed hash.
		req = srv.signedPut(t, c, "/trunc/"+key, 1000, sha256hex(full[:2000]), nil)
		st, code, rb = rawExchange(t, req, full[:2000])
		wantRaw(t, "short Content-Length, signed hash of more "+key, st, code, rb, http.StatusBadRequest, "XAmzContentSHA256Mismatch")
		req = srv.signedPut(t, c, "/trunc/"+key, 1000, "UNSIGNED-PAYLOAD", http.Header{"Content-Md5": {md5b64(full[:2000])}})
		st, code, rb = rawExchange(t, req, full[:2000])
		wantRaw(t, "short Content-Length, Content-MD5 of more "+key, st, code, rb, http.StatusBadRequest, "BadDigest")
	}
	assertAbsent(t, a, "trunc", "new")
	assertContent(t, a, "trunc", "existing", old)

	// Larger than S3's 5 GiB single-PUT limit: refused before any body is read.
	req := srv.signedPut(t, c, "/trunc/huge", 5<<30+1, "UNSIGNED-PAYLOAD", nil)
	st, code, rb := rawExchange(t, req, nil)
	wantRaw(t, "PUT of 5 GiB + 1", st, code, rb, http.StatusBadRequest, "EntityTooLarge")
	assertAbsent(t, a, "trunc", "huge")
	waitNoTempFiles(t, dataDir)
}

// awsChunked frames data as an aws-chunked body with an optional trailer.
func awsChunked(data []byte, chunk int, trailer string) []byte {
	var b bytes.Buffer
	for len(data) > 0 {
		n := min(chunk, len(data))
		fmt.Fprintf(&b, "%x\r\n", n)
		b.Write(data[:n])
		b.WriteString("\r\n")
		data = data[n:]
	}
	b.WriteString("0\r\n")
	if trailer != "" {
		b.WriteString(trailer + "\r\n")
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

func TestUnsignedTrailerRaw(t *testing.T) {
	dataDir := t.TempDir()
	srv := startServer(t, dataDir)
	c := srv.createTenant(t, "alice")
	a := srv.sdk(c)
	mkBucket(t, a, "trail")
	data := pattern("trailer", 150_000)
	crc := crc32b64(data, crc32.IEEETable)
	hdr := func(decoded int) http.Header {
		return http.Header{
			"Content-Encoding":             {"aws-chunked"},
			"X-Amz-Decoded-Content-Length": {strconv.Itoa(decoded)},
			"X-Amz-Trailer":                {"x-amz-checksum-crc32"},
		}
	}
	put := func(key string, body []byte, h http.Header) (int, string, []byte) {
		req := srv.signedPut(t, c, "/trail/"+key, int64(len(body)), "STREAMING-UNSIGNED-PAYLOAD-TRAILER", h)
		return rawExchange(t, req, body)
	}

	st, code, rb := put("good", awsChunked(data, 64*1024, "x-amz-checksum-crc32:"+crc), hdr(len(data)))
	if st != http.StatusOK {
		t.Fatalf("valid STREAMING-UNSIGNED-PAYLOAD-TRAILER PUT: %d %s %s", st, code, rb)
	}
	assertContent(t, a, "trail", "good", data)
	get, err := a.GetObject(ctxT(t), &s3.GetObjectInput{Bucket: aws.String("trail"), Key: aws.String("good"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	get.Body.Close()
	if aws.ToString(get.ChecksumCRC32) != crc {
		t.Errorf("stored trailer checksum = %q; want %q", aws.ToString(get.ChecksumCRC32), crc)
	}

	wrongCRC := crc32b64([]byte("other"), crc32.IEEETable)
	cases := []struct {
		name string
		body []byte
		h    http.Header
		code string
	}{
		{"wrong trailer checksum", awsChunked(data, 64*1024, "x-amz-checksum-crc32:"+wrongCRC), hdr(len(data)), "BadDigest"},
		{"decoded length larger than the chunks", awsChunked(data, 64*1024, "x-amz-checksum-crc32:"+crc), hdr(len(data) + 10), ""},
		{"decoded length smaller than the chunks", awsChunked(data, 64*1024, "x-amz-checksum-crc32:"+crc), hdr(len(data) - 10), ""},
		{"missing trailer", awsChunked(data, 64*1024, ""), hdr(len(data)), ""},
		{"bad chunk size", append([]byte("zz\r\n"), awsChunked(data, 64*1024, "x-amz-checksum-crc32:"+crc)...), hdr(len(data)), ""},
		{"chunk cut short", awsChunked(data, 64*1024, "x-amz-checksum-crc32:"+crc)[:100_000], hdr(len(data)), ""},
	}
	for _, tc := range cases {
		st, code, rb := put("bad", tc.body, tc.h)
		if st == http.StatusOK || (tc.code != "" && code != tc.code) || (st != 0 && st < 400) {
			t.Errorf("%s: %d %q; want a 4xx error %s (%s)", tc.name, st, code, tc.code, truncate(rb, 300))
		}
		st, code, rb = put("good", tc.body, tc.h)
		if st == http.StatusOK {
			t.Errorf("%s over an existing object: 200; want an error (%s)", tc.name, truncate(rb, 200))
		}
	}
	assertAbsent(t, a, "trail", "bad")
	assertContent(t, a, "trail", "good", data)
	waitNoTempFiles(t, dataDir)
}

// sha256Hasher gives minio's streaming signer the hasher it wants.
type sha256Hasher struct{ hash.Hash }

func (sha256Hasher) Close() {}

// flipReader corrupts one byte of the stream at offset at.
type flipReader struct {
	r   io.Reader
	pos int
	at  int
}

func (f *flipReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if f.at >= f.pos && f.at < f.pos+n {
		p[f.at-f.pos] ^= 0x01
	}
	f.pos += n
	return n, err
}

func (f *flipReader) Close() error { return nil }

func TestStreamingSignatureTampered(t *testing.T) {
	dataDir := t.TempDir()
	srv := startServer(t, dataDir)
	c := srv.createTenant(t, "alice")
	a := srv.sdk(c)
	mkBucket(t, a, "stream")
	data := pattern("streaming", 150_000) // three signed chunks of 64 KiB at most
	streamReq := func(key string, signWith creds) *http.Request {
		req, err := http.NewRequest(http.MethodPut, srv.endpoint()+"/stream/"+key, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		return miniosigner.StreamingSignV4(req, signWith.AccessKey, signWith.SecretKey, "", region, int64(len(data)), time.Now().UTC(), sha256Hasher{sha256.New()})
	}
	req := streamReq("good", c)
	if st, code, rb := send(t, req); st != http.StatusOK {
		t.Fatalf("valid STREAMING-AWS4-HMAC-SHA256-PAYLOAD PUT: %d %s %s", st, code, rb)
	}
	assertContent(t, a, "stream", "good", data)

	// First chunk header is "10000;chunk-signature=<64 hex>\r\n" (88 bytes).
	chunk2 := 88 + 64*1024 + 2
	for _, tc := range []struct {
		name  string
		at    int
		exact bool // a data byte must give SignatureDoesNotMatch; a garbled signature may also be a 400
	}{
		{"data byte in chunk 1", 1000, true},
		{"data byte in the last chunk", chunk2 + 88 + 64*1024 + 2 + 100, true},
		{"signature of chunk 2", chunk2 + 30, false},
	} {
		for _, key := range []string{"bad", "good"} {
			req := streamReq(key, c)
			req.Body = &flipReader{r: req.Body, at: tc.at}
			st, code, rb := send(t, req)
			if tc.exact && (st != http.StatusForbidden || code != "SignatureDoesNotMatch") || st < 400 || st > 499 {
				t.Errorf("streaming PUT %s with a corrupted %s: %d %q; want 403 SignatureDoesNotMatch (%s)", key, tc.name, st, code, truncate(rb, 200))
			}
		}
	}
	assertAbsent(t, a, "stream", "bad")
	assertContent(t, a, "stream", "good", data)
	waitNoTempFiles(t, dataDir)
}
