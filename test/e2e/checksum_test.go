package e2e

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func crc32b64(b []byte, tab *crc32.Table) string {
	var out [4]byte
	binary.BigEndian.PutUint32(out[:], crc32.Checksum(b, tab))
	return base64.StdEncoding.EncodeToString(out[:])
}

// checksums returns the base64 x-amz-checksum-* values of b by algorithm.
func checksums(b []byte) map[types.ChecksumAlgorithm]string {
	s1 := sha1.Sum(b)
	s256 := sha256.Sum256(b)
	return map[types.ChecksumAlgorithm]string{
		types.ChecksumAlgorithmCrc32:  crc32b64(b, crc32.IEEETable),
		types.ChecksumAlgorithmCrc32c: crc32b64(b, crc32.MakeTable(crc32.Castagnoli)),
		types.ChecksumAlgorithmSha1:   base64.StdEncoding.EncodeToString(s1[:]),
		types.ChecksumAlgorithmSha256: base64.StdEncoding.EncodeToString(s256[:]),
	}
}

func pickChecksum(alg types.ChecksumAlgorithm, crc32v, crc32c, sha1v, sha256v *string) string {
	switch alg {
	case types.ChecksumAlgorithmCrc32:
		return aws.ToString(crc32v)
	case types.ChecksumAlgorithmCrc32c:
		return aws.ToString(crc32c)
	case types.ChecksumAlgorithmSha1:
		return aws.ToString(sha1v)
	case types.ChecksumAlgorithmSha256:
		return aws.ToString(sha256v)
	}
	return ""
}

func TestChecksums(t *testing.T) {
	srv := startServer(t, t.TempDir())
	c := srv.createTenant(t, "alice")
	algs := []types.ChecksumAlgorithm{types.ChecksumAlgorithmCrc32, types.ChecksumAlgorithmCrc32c, types.ChecksumAlgorithmSha1, types.ChecksumAlgorithmSha256}
	// Over "TLS" the SDK sends STREAMING-UNSIGNED-PAYLOAD-TRAILER with the
	// checksum in a trailer; over plain HTTP it signs the payload and sends
	// the checksum as a header.
	trailer, rec := srv.sdkTrailerRecorded(c)
	clients := map[string]*s3.Client{"trailer": trailer, "header": srv.sdk(c)}
	defer func() {
		t.Logf("trailer client PUT payload modes: %v", rec.modes)
		if n := rec.count("STREAMING-UNSIGNED-PAYLOAD-TRAILER"); n < len(algs)+2 {
			t.Errorf("the trailer client sent %d PUTs as STREAMING-UNSIGNED-PAYLOAD-TRAILER (modes %v); the test did not exercise trailers", n, rec.modes)
		}
	}()
	ctx := ctxT(t)
	mkBucket(t, clients["header"], "sums")
	for mode, cl := range clients {
		for i, alg := range algs {
			key := mode + "/" + string(alg)
			body := pattern(key, 70_000+i*12345)
			want := checksums(body)[alg]
			put, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("sums"), Key: aws.String(key), Body: bytes.NewReader(body), ChecksumAlgorithm: alg})
			if err != nil {
				t.Errorf("%s PutObject %s: %v", mode, alg, err)
				continue
			}
			if got := pickChecksum(alg, put.ChecksumCRC32, put.ChecksumCRC32C, put.ChecksumSHA1, put.ChecksumSHA256); got != want {
				t.Errorf("%s PutObject %s: response checksum %q; want %q", mode, alg, got, want)
			}
			get, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("sums"), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
			if err != nil {
				t.Errorf("%s GetObject %s: %v", mode, alg, err)
				continue
			}
			got := readAllClose(t, get.Body)
			if !bytes.Equal(got, body) {
				t.Errorf("%s %s: object reads back %d bytes; want %d", mode, alg, len(got), len(body))
			}
			if gc := pickChecksum(alg, get.ChecksumCRC32, get.ChecksumCRC32C, get.ChecksumSHA1, get.ChecksumSHA256); gc != want {
				t.Errorf("%s GetObject %s with ChecksumMode: checksum %q; want %q", mode, alg, gc, want)
			}
			if aws.ToString(get.ETag) != quotedETag(body) {
				t.Errorf("%s %s: ETag %s; want %s", mode, alg, aws.ToString(get.ETag), quotedETag(body))
			}
			head, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("sums"), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
			if err != nil {
				t.Errorf("%s HeadObject %s: %v", mode, alg, err)
			} else if hc := pickChecksum(alg, head.ChecksumCRC32, head.ChecksumCRC32C, head.ChecksumSHA1, head.ChecksumSHA256); hc != want {
				t.Errorf("%s HeadObject %s with ChecksumMode: checksum %q; want %q", mode, alg, hc, want)
			}
		}
		// The SDK's default (no algorithm asked): CRC32 when supported.
		key := mode + "/default"
		body := pattern(key, 123_456)
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("sums"), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Errorf("%s PutObject default checksum: %v", mode, err)
		} else {
			assertContent(t, cl, "sums", key, body)
		}
		// An empty body with a trailer.
		key = mode + "/empty"
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("sums"), Key: aws.String(key), Body: bytes.NewReader(nil), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32}); err != nil {
			t.Errorf("%s PutObject empty: %v", mode, err)
		} else {
			assertContent(t, cl, "sums", key, []byte{})
		}
	}

	// Multipart through the upload manager with trailing checksums per part.
	body := pattern("mpu-checksum", 11*mib)
	up := manager.NewUploader(clients["trailer"], func(u *manager.Uploader) { u.PartSize = 5 * mib })
	if _, err := up.Upload(ctx, &s3.PutObjectInput{Bucket: aws.String("sums"), Key: aws.String("mpu"), Body: bytes.NewReader(body), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c}); err != nil {
		t.Errorf("manager Upload with CRC32C trailers: %v", err)
	} else {
		assertContent(t, clients["header"], "sums", "mpu", body)
	}
}

func TestChecksumMismatch(t *testing.T) {
	srv := startServer(t, t.TempDir())
	c := srv.createTenant(t, "alice")
	a := srv.sdk(c)
	ctx := ctxT(t)
	mkBucket(t, a, "bad")
	old := []byte("old content that must survive")
	putBytes(t, a, "bad", "existing", old)
	body := []byte("the body actually sent")
	wrongMD5 := md5b64([]byte("something else"))

	for _, key := range []string{"new", "existing"} {
		_, err := a.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bad"), Key: aws.String(key), Body: bytes.NewReader(body), ContentMD5: aws.String(wrongMD5)})
		wantErr(t, "PutObject Content-MD5 mismatch "+key, err, "BadDigest", http.StatusBadRequest)
		wrong := checksums([]byte("something else"))
		_, err = a.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bad"), Key: aws.String(key), Body: bytes.NewReader(body), ChecksumSHA256: aws.String(wrong[types.ChecksumAlgorithmSha256])})
		wantErr(t, "PutObject x-amz-checksum-sha256 mismatch "+key, err, "BadDigest", http.StatusBadRequest)
		_, err = a.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bad"), Key: aws.String(key), Body: bytes.NewReader(body), ChecksumCRC32: aws.String(wrong[types.ChecksumAlgorithmCrc32])})
		wantErr(t, "PutObject x-amz-checksum-crc32 mismatch "+key, err, "BadDigest", http.StatusBadRequest)
	}
	assertAbsent(t, a, "bad", "new")
	assertContent(t, a, "bad", "existing", old)

	// A Content-MD5 that is not base64 of 16 bytes.
	st, code, rb := srv.doRaw(t, c, http.MethodPut, "/bad/new", body, http.Header{"Content-Md5": {"not-an-md5"}})
	wantRaw(t, "PUT malformed Content-MD5", st, code, rb, http.StatusBadRequest, "InvalidDigest")
	// The right Content-MD5 is accepted.
	if _, err := a.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bad"), Key: aws.String("good"), Body: bytes.NewReader(body), ContentMD5: aws.String(md5b64(body))}); err != nil {
		t.Errorf("PutObject with correct Content-MD5: %v", err)
	}
	// UploadPart verifies Content-MD5 too.
	mp, err := a.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bad"), Key: aws.String("mp")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bad"), Key: aws.String("mp"), UploadId: mp.UploadId, PartNumber: aws.Int32(1), Body: strings.NewReader("part"), ContentMD5: aws.String(wrongMD5)})
	wantErr(t, "UploadPart Content-MD5 mismatch", err, "BadDigest", http.StatusBadRequest)
	parts, err := a.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("bad"), Key: aws.String("mp"), UploadId: mp.UploadId})
	if err != nil {
		t.Errorf("ListParts after a bad part: %v", err)
	} else if len(parts.Parts) != 0 {
		t.Errorf("after a bad part, ListParts = %d parts; want 0", len(parts.Parts))
	}
}
