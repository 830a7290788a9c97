package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/facet-sds/facet/internal/storage/s3/s3test"
)

// TestServeRemoteBackend: with --backend, objects written through Facet
// land in the remote store (under the prefix, bucket by bucket) and read
// back whole, by range, and in listings.
func TestServeRemoteBackend(t *testing.T) {
	remote := s3test.Start(t)
	client, _ := startWithBackend(t, remote.URL("gw"))
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bucket1")}); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("remote facet "), 5000)
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bucket1"), Key: aws.String("dir/obj"),
		Body: bytes.NewReader(body), Metadata: map[string]string{"color": "blue"}}); err != nil {
		t.Fatalf("put: %v", err)
	}
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bucket1"), Key: aws.String("dir/obj"), Range: aws.String("bytes=13-18")})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	got, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(got) != "remote" || out.Metadata["color"] != "blue" {
		t.Fatalf("range get = %q, meta %v", got, out.Metadata)
	}
	lo, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bucket1")})
	if err != nil || len(lo.Contents) != 1 || aws.ToInt64(lo.Contents[0].Size) != int64(len(body)) {
		t.Fatalf("list = %+v, %v", lo, err)
	}
	// The bytes are in the remote bucket, under prefix/bucket/key.
	raw, err := remote.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(remote.Bucket), Key: aws.String("gw/bucket1/dir/obj")})
	if err != nil {
		t.Fatalf("object not in the remote store: %v", err)
	}
	if !strings.Contains(strings.Join(mapKeys(raw.Metadata), ","), "facet") {
		t.Fatalf("remote object lacks Facet metadata: %v", raw.Metadata)
	}
	_, err = client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bucket1"), Key: aws.String("missing")})
	if apiCode(err) != "NoSuchKey" {
		t.Fatalf("missing key: %v", err)
	}
	// A key the backend refuses as too long is the client's error.
	_, err = client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bucket1"), Key: aws.String(strings.Repeat("k", 300)),
		Body: strings.NewReader("x")})
	if apiCode(err) != "KeyTooLongError" {
		t.Fatalf("a key too long for the backend: %v", err)
	}

	// Backend down: a prompt 503 the client may retry, never a hang.
	remote.Stop()
	_, err = client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bucket1"), Key: aws.String("dir/obj")}, func(o *s3.Options) { o.RetryMaxAttempts = 1 })
	var re *awshttp.ResponseError
	if apiCode(err) != "SlowDown" || !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusServiceUnavailable || re.Response.Header.Get("Retry-After") == "" {
		t.Fatalf("GET with the backend down: %v", err)
	}
}

func mapKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
