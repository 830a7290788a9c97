package e2e

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
)

const mib = 1 << 20

// multipartETag is S3's ETag for an object assembled from parts.
func multipartETag(parts ...[]byte) string {
	var cat []byte
	for _, p := range parts {
		h := md5.Sum(p)
		cat = append(cat, h[:]...)
	}
	h := md5.Sum(cat)
	return fmt.Sprintf(`"%s-%d"`, hex.EncodeToString(h[:]), len(parts))
}

func split(b []byte, size int) [][]byte {
	var out [][]byte
	for len(b) > size {
		out = append(out, b[:size])
		b = b[size:]
	}
	return append(out, b)
}

func TestMultipartClients(t *testing.T) {
	srv := startServer(t, t.TempDir())
	c := srv.createTenant(t, "alice")
	a := srv.sdk(c)
	ctx := ctxT(t)
	mkBucket(t, a, "mpu")
	body := pattern("multipart-26", 26*mib)
	wantETag := multipartETag(split(body, 5*mib)...)

	// aws-sdk-go-v2's upload manager, 5 MiB parts, 3 at a time.
	up := manager.NewUploader(a, func(u *manager.Uploader) { u.PartSize = 5 * mib; u.Concurrency = 3 })
	res, err := up.Upload(ctx, &s3.PutObjectInput{Bucket: aws.String("mpu"), Key: aws.String("sdk/big"), Body: bytes.NewReader(body), ContentType: aws.String("application/x-big")})
	if err != nil {
		t.Fatalf("manager Upload: %v", err)
	}
	if aws.ToString(res.ETag) != wantETag {
		t.Errorf("manager Upload ETag = %s; want %s", aws.ToString(res.ETag), wantETag)
	}
	got, out := getBytes(t, a, "mpu", "sdk/big")
	if !bytes.Equal(got, body) {
		t.Errorf("sdk multipart object reads back %d bytes (md5 %s); want %d (md5 %s)", len(got), md5hex(got), len(body), md5hex(body))
	}
	if aws.ToString(out.ETag) != wantETag || aws.ToString(out.ContentType) != "application/x-big" {
		t.Errorf("GET sdk/big: ETag %s type %q; want %s application/x-big", aws.ToString(out.ETag), aws.ToString(out.ContentType), wantETag)
	}

	// minio-go, 5 MiB parts, known size.
	mc := srv.minio(t, c)
	info, err := mc.PutObject(ctx, "mpu", "minio/big", bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{PartSize: 5 * mib, ContentType: "application/x-big"})
	if err != nil {
		t.Fatalf("minio PutObject multipart: %v", err)
	}
	if `"`+strings.Trim(info.ETag, `"`)+`"` != wantETag {
		t.Errorf("minio multipart ETag = %s; want %s", info.ETag, wantETag)
	}
	assertContent(t, a, "mpu", "minio/big", body)

	// minio-go with an unknown size streams parts of 5 MiB too.
	info, err = mc.PutObject(ctx, "mpu", "minio/stream", struct{ *bytes.Reader }{bytes.NewReader(body[:11*mib])}, -1, minio.PutObjectOptions{PartSize: 5 * mib})
	if err != nil {
		t.Fatalf("minio PutObject unknown size: %v", err)
	}
	assertContent(t, a, "mpu", "minio/stream", body[:11*mib])

	if ups, err := a.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("mpu")}); err != nil || len(ups.Uploads) != 0 {
		t.Errorf("after completed uploads, ListMultipartUploads = %v, %v; want none", ups, err)
	}
}

func TestMultipartLowLevel(t *testing.T) {
	srv := startServer(t, t.TempDir())
	a := srv.sdk(srv.createTenant(t, "alice"))
	ctx := ctxT(t)
	mkBucket(t, a, "mpu")
	src := pattern("copy-source", 6*mib)
	putBytes(t, a, "mpu", "source object", src)

	create, err := a.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket: aws.String("mpu"), Key: aws.String("assembled/obj"),
		ContentType: aws.String("application/x-assembled"), Metadata: map[string]string{"made-by": "parts"},
	})
	if err != nil {
		t.Fatalf("CreateMultipartUpload: %v", err)
	}
	uid := create.UploadId
	if aws.ToString(uid) == "" {
		t.Fatal("CreateMultipartUpload returned no UploadId")
	}
	part1 := pattern("part1", 5*mib)
	part3 := []byte("a short last part")
	p1, err := a.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("mpu"), Key: aws.String("assembled/obj"), UploadId: uid, PartNumber: aws.Int32(1), Body: bytes.NewReader(part1)})
	if err != nil {
		t.Fatalf("UploadPart 1: %v", err)
	}
	if aws.ToString(p1.ETag) != quotedETag(part1) {
		t.Errorf("UploadPart 1 ETag = %s; want %s", aws.ToString(p1.ETag), quotedETag(part1))
	}
	// Part 2 is copied from bytes 1 MiB .. 6 MiB-1 of another object.
	p2, err := a.UploadPartCopy(ctx, &s3.UploadPartCopyInput{
		Bucket: aws.String("mpu"), Key: aws.String("assembled/obj"), UploadId: uid, PartNumber: aws.Int32(2),
		CopySource: aws.String("mpu/" + urlPathEscape("source object")), CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", mib, 6*mib-1)),
	})
	if err != nil {
		t.Fatalf("UploadPartCopy: %v", err)
	}
	part2 := src[mib:]
	if p2.CopyPartResult == nil || aws.ToString(p2.CopyPartResult.ETag) != quotedETag(part2) {
		t.Errorf("UploadPartCopy ETag = %v; want %s", p2.CopyPartResult, quotedETag(part2))
	}
	// Re-uploading a part number replaces it.
	if _, err := a.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("mpu"), Key: aws.String("assembled/obj"), UploadId: uid, PartNumber: aws.Int32(3), Body: strings.NewReader("to be replaced")}); err != nil {
		t.Fatalf("UploadPart 3 (first): %v", err)
	}
	p3, err := a.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("mpu"), Key: aws.String("assembled/obj"), UploadId: uid, PartNumber: aws.Int32(3), Body: bytes.NewReader(part3)})
	if err != nil {
		t.Fatalf("UploadPart 3 (again): %v", err)
	}

	parts, err := a.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("mpu"), Key: aws.String("assembled/obj"), UploadId: uid})
	if err != nil {
		t.Fatalf("ListParts: %v", err)
	}
	wantParts := [][]byte{part1, part2, part3}
	if len(parts.Parts) != 3 {
		t.Fatalf("ListParts: %d parts; want 3", len(parts.Parts))
	}
	for i, p := range parts.Parts {
		if aws.ToInt32(p.PartNumber) != int32(i+1) || aws.ToInt64(p.Size) != int64(len(wantParts[i])) || aws.ToString(p.ETag) != quotedETag(wantParts[i]) {
			t.Errorf("ListParts[%d] = #%d size %d etag %s; want #%d size %d etag %s", i, aws.ToInt32(p.PartNumber), aws.ToInt64(p.Size), aws.ToString(p.ETag), i+1, len(wantParts[i]), quotedETag(wantParts[i]))
		}
	}
	// Paged ListParts.
	pg, err := a.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("mpu"), Key: aws.String("assembled/obj"), UploadId: uid, MaxParts: aws.Int32(2)})
	if err != nil || len(pg.Parts) != 2 || !aws.ToBool(pg.IsTruncated) || aws.ToString(pg.NextPartNumberMarker) != "2" {
		t.Errorf("ListParts max-parts=2: %v; want 2 parts, truncated, next marker 2", err)
	} else {
		pg, err = a.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("mpu"), Key: aws.String("assembled/obj"), UploadId: uid, PartNumberMarker: aws.String("2")})
		if err != nil || len(pg.Parts) != 1 || aws.ToInt32(pg.Parts[0].PartNumber) != 3 {
			t.Errorf("ListParts after marker 2: %v; want part 3 only", err)
		}
	}

	ups, err := a.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("mpu")})
	if err != nil {
		t.Fatalf("ListMultipartUploads: %v", err)
	}
	if len(ups.Uploads) != 1 || aws.ToString(ups.Uploads[0].UploadId) != aws.ToString(uid) || aws.ToString(ups.Uploads[0].Key) != "assembled/obj" {
		t.Errorf("ListMultipartUploads = %+v; want the one upload", ups.Uploads)
	}
	// An unfinished upload is not an object.
	assertAbsent(t, a, "mpu", "assembled/obj")

	completed := func(nums ...int32) *types.CompletedMultipartUpload {
		etags := map[int32]string{1: aws.ToString(p1.ETag), 2: aws.ToString(p2.CopyPartResult.ETag), 3: aws.ToString(p3.ETag)}
		var cps []types.CompletedPart
		for _, n := range nums {
			cps = append(cps, types.CompletedPart{PartNumber: aws.Int32(n), ETag: aws.String(etags[n])})
		}
		return &types.CompletedMultipartUpload{Parts: cps}
	}
	// Wrong ETag, missing part, wrong order, too-small middle part.
	bad := completed(1, 2, 3)
	bad.Parts[1].ETag = aws.String(`"00000000000000000000000000000000"`)
	_, err = a.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("assembled/obj"), UploadId: uid, MultipartUpload: bad})
	wantErr(t, "Complete with wrong part ETag", err, "InvalidPart", http.StatusBadRequest)
	missing := completed(1, 2)
	missing.Parts = append(missing.Parts, types.CompletedPart{PartNumber: aws.Int32(4), ETag: aws.String(quotedETag(part3))})
	_, err = a.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("assembled/obj"), UploadId: uid, MultipartUpload: missing})
	wantErr(t, "Complete with a part never uploaded", err, "InvalidPart", http.StatusBadRequest)
	_, err = a.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("assembled/obj"), UploadId: uid, MultipartUpload: completed(2, 1, 3)})
	wantErr(t, "Complete with parts out of order", err, "InvalidPartOrder", http.StatusBadRequest)
	_, err = a.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("assembled/obj"), UploadId: uid, MultipartUpload: completed(1, 3, 2)})
	wantErr(t, "Complete with parts out of order (2)", err, "InvalidPartOrder", http.StatusBadRequest)
	_, err = a.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("assembled/obj"), UploadId: uid, MultipartUpload: completed(1, 3, 3)})
	if errCode(err) != "InvalidPartOrder" && errCode(err) != "InvalidPart" {
		t.Errorf("Complete with a repeated part: %v; want InvalidPartOrder", err)
	}
	assertAbsent(t, a, "mpu", "assembled/obj")

	// A failed Complete leaves the upload usable.
	done, err := a.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("assembled/obj"), UploadId: uid, MultipartUpload: completed(1, 2, 3)})
	if err != nil {
		t.Fatalf("CompleteMultipartUpload: %v", err)
	}
	wantETag := multipartETag(part1, part2, part3)
	if aws.ToString(done.ETag) != wantETag {
		t.Errorf("Complete ETag = %s; want %s", aws.ToString(done.ETag), wantETag)
	}
	whole := bytes.Join(wantParts, nil)
	got, out := getBytes(t, a, "mpu", "assembled/obj")
	if !bytes.Equal(got, whole) {
		t.Errorf("assembled object: %d bytes md5 %s; want %d bytes md5 %s", len(got), md5hex(got), len(whole), md5hex(whole))
	}
	if aws.ToString(out.ETag) != wantETag || out.Metadata["made-by"] != "parts" || aws.ToString(out.ContentType) != "application/x-assembled" {
		t.Errorf("assembled object: ETag %s, metadata %v, type %q", aws.ToString(out.ETag), out.Metadata, aws.ToString(out.ContentType))
	}
	// A range across the part 1/part 2 boundary.
	rg, err := a.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("mpu"), Key: aws.String("assembled/obj"), Range: aws.String(fmt.Sprintf("bytes=%d-%d", 5*mib-10, 5*mib+9))})
	if err != nil {
		t.Fatal(err)
	}
	rbAll := readAllClose(t, rg.Body)
	if !bytes.Equal(rbAll, whole[5*mib-10:5*mib+10]) {
		t.Errorf("range across parts: %x; want %x", rbAll, whole[5*mib-10:5*mib+10])
	}
	_, err = a.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("mpu"), Key: aws.String("assembled/obj"), UploadId: uid})
	wantErr(t, "ListParts after complete", err, "NoSuchUpload", http.StatusNotFound)

	// Too-small non-last part.
	small, err := a.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("small")})
	if err != nil {
		t.Fatal(err)
	}
	s1, err := a.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("mpu"), Key: aws.String("small"), UploadId: small.UploadId, PartNumber: aws.Int32(1), Body: strings.NewReader("tiny")})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := a.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("mpu"), Key: aws.String("small"), UploadId: small.UploadId, PartNumber: aws.Int32(2), Body: strings.NewReader("tiny too")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("small"), UploadId: small.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: s1.ETag}, {PartNumber: aws.Int32(2), ETag: s2.ETag}}}})
	wantErr(t, "Complete with a 4-byte first part", err, "EntityTooSmall", http.StatusBadRequest)
	assertAbsent(t, a, "mpu", "small")

	// Abort.
	if _, err := a.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("small"), UploadId: small.UploadId}); err != nil {
		t.Fatalf("AbortMultipartUpload: %v", err)
	}
	_, err = a.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("mpu"), Key: aws.String("small"), UploadId: small.UploadId})
	wantErr(t, "ListParts after abort", err, "NoSuchUpload", http.StatusNotFound)
	_, err = a.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("mpu"), Key: aws.String("small"), UploadId: small.UploadId, PartNumber: aws.Int32(3), Body: strings.NewReader("late")})
	wantErr(t, "UploadPart after abort", err, "NoSuchUpload", http.StatusNotFound)
	_, err = a.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("small"), UploadId: aws.String("no-such-upload-id")})
	wantErr(t, "Abort unknown upload", err, "NoSuchUpload", http.StatusNotFound)
	_, err = a.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("mpu"), Key: aws.String("small"), UploadId: aws.String("no-such-upload-id"), PartNumber: aws.Int32(1), Body: strings.NewReader("x")})
	wantErr(t, "UploadPart unknown upload", err, "NoSuchUpload", http.StatusNotFound)
	_, err = a.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("mpu"), Key: aws.String("small"), UploadId: small.UploadId, PartNumber: aws.Int32(10001), Body: strings.NewReader("x")})
	if err == nil {
		t.Errorf("UploadPart number 10001 succeeded; want InvalidArgument")
	}
	if ups, err := a.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("mpu")}); err != nil || len(ups.Uploads) != 0 {
		t.Errorf("after complete and abort, ListMultipartUploads = %+v, %v; want none", ups, err)
	}
	if keys := listAll(t, a, "mpu", ""); !sameSet(keys, []string{"assembled/obj", "source object"}) {
		t.Errorf("listing = %q; want [assembled/obj, source object]", keys)
	}
}
