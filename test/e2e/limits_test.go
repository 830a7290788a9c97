package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// TestHostileNestedXML is issue 22's attack on the XML decoders: 2 MiB of
// nested elements, correctly signed, in DeleteObjects and
// CompleteMultipartUpload. Each is refused with MalformedXML naming the
// limit, 16 at a time, and the server's resident memory stays small (the
// bodies were ~70 MB each to decode).
func TestHostileNestedXML(t *testing.T) {
	const (
		concurrent = 16
		limitMB    = 200
	)
	srv := startServer(t, t.TempDir())
	c := srv.createTenant(t, "xmlbomb")
	cl := srv.sdk(c)
	mkBucket(t, cl, "xmlbomb")
	up, err := cl.CreateMultipartUpload(context.Background(), &s3.CreateMultipartUploadInput{Bucket: aws.String("xmlbomb"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct{ name, path, root string }{
		{"DeleteObjects", "/xmlbomb?delete", "Delete"},
		{"CompleteMultipartUpload", "/xmlbomb/k?uploadId=" + url.QueryEscape(*up.UploadId), "CompleteMultipartUpload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte("<" + tc.root + ">" + strings.Repeat("<a>", (2<<20-64)/3))
			var wg sync.WaitGroup
			errs := make(chan error, concurrent)
			for range concurrent {
				wg.Go(func() {
					hdr := http.Header{}
					if tc.root == "Delete" {
						hdr.Set("Content-MD5", md5b64(body))
					}
					status, code, resp := srv.doRaw(t, c, http.MethodPost, tc.path, body, hdr)
					if status != http.StatusBadRequest || code != "MalformedXML" || !bytes.Contains(resp, []byte("maximum of 16")) {
						errs <- fmt.Errorf("status %d, code %q, body %.300s; want 400 MalformedXML naming the depth limit", status, code, resp)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
	hwm, err := procStatusKB(srv.pid(), "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("server peak RSS (VmHWM) after %d concurrent hostile bodies per operation: %d MB", concurrent, hwm/1024)
	if hwm/1024 >= limitMB {
		t.Errorf("server peak RSS %d MB; want < %d MB", hwm/1024, limitMB)
	}
}

// TestParquetBomb is issue 22's decompression bomb: a 16.6 KB Parquet
// object declaring one 512 MiB zstd page (internal/s3select's
// TestParquetBomb writes it) cost ~520 MB per SelectObjectContent, and 4
// concurrent selects peaked at 2.2 GB. Each select now ends with S3's
// OverMaxParquetBlockSize and the server's peak RSS stays under 200 MB.
func TestParquetBomb(t *testing.T) {
	const (
		concurrent = 4
		limitMB    = 200
	)
	bomb, err := os.ReadFile("../../internal/s3select/testdata/parquet-bomb.parquet")
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, t.TempDir())
	c := srv.createTenant(t, "pqbomb")
	cl := srv.sdk(c)
	mkBucket(t, cl, "pqbomb")
	ctx := context.Background()
	if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("pqbomb"), Key: aws.String("bomb.parquet"), Body: bytes.NewReader(bomb)}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, concurrent)
	for range concurrent {
		wg.Go(func() {
			out, err := cl.SelectObjectContent(ctx, &s3.SelectObjectContentInput{
				Bucket: aws.String("pqbomb"), Key: aws.String("bomb.parquet"),
				Expression: aws.String("SELECT COUNT(*) FROM S3Object s WHERE s.x > 0"), ExpressionType: types.ExpressionTypeSql,
				InputSerialization:  &types.InputSerialization{Parquet: &types.ParquetInput{}},
				OutputSerialization: &types.OutputSerialization{CSV: &types.CSVOutput{}},
			})
			if err == nil {
				stream := out.GetStream()
				for range stream.Events() {
				}
				err = stream.Err()
				stream.Close()
			}
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != "OverMaxParquetBlockSize" {
				errs <- fmt.Errorf("select: %v; want OverMaxParquetBlockSize", err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// A 25-byte object whose footer declares 2^31 schema elements made
	// the Parquet reader ask for 206 GB: a fatal error, the server gone.
	footer := []byte{0x15, 0x02, 0x19, 0xFC, 0xFF, 0xFF, 0xFF, 0xFF, 0x07, 0x00, 0x00, 0x00}
	tiny := append([]byte("PAR1"), footer...)
	tiny = binary.LittleEndian.AppendUint32(tiny, uint32(len(footer)))
	tiny = append(tiny, "PAR1"...)
	if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("pqbomb"), Key: aws.String("footer.parquet"), Body: bytes.NewReader(tiny)}); err != nil {
		t.Fatal(err)
	}
	out, err := cl.SelectObjectContent(ctx, &s3.SelectObjectContentInput{
		Bucket: aws.String("pqbomb"), Key: aws.String("footer.parquet"),
		Expression: aws.String("SELECT * FROM S3Object"), ExpressionType: types.ExpressionTypeSql,
		InputSerialization:  &types.InputSerialization{Parquet: &types.ParquetInput{}},
		OutputSerialization: &types.OutputSerialization{CSV: &types.CSVOutput{}},
	})
	if err == nil {
		stream := out.GetStream()
		for range stream.Events() {
		}
		err = stream.Err()
		stream.Close()
	}
	if ae := smithy.APIError(nil); !errors.As(err, &ae) || ae.ErrorCode() != "ParquetParsingError" {
		t.Errorf("select over the footer bomb: %v; want ParquetParsingError", err)
	}
	if _, err := cl.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("pqbomb")}); err != nil {
		t.Fatalf("the server does not answer after the footer bomb: %v", err)
	}

	hwm, err := procStatusKB(srv.pid(), "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("server peak RSS (VmHWM) after %d concurrent selects over the bomb: %d MB", concurrent, hwm/1024)
	if hwm/1024 >= limitMB {
		t.Errorf("server peak RSS %d MB; want < %d MB", hwm/1024, limitMB)
	}
}
