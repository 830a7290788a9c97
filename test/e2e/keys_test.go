package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/minio/minio-go/v7"
)

// hostileKeys are legal S3 keys that a naive path-based store would clean,
// merge, or let escape its directory.
var hostileKeys = []string{
	"../x",
	"../../../../../../escape-marker",
	"a//b",
	"./a",
	"a/./b",
	"a/../b",
	"/leading-slash",
	"trailing-slash/",
	"trailing-slash", // a different key from the one above
	"caf\u00e9",      // NFC and NFD spellings are different keys: no normalisation
	"cafe\u0301",
	"Case", // a case-insensitive store would merge these
	"case",
	"a/b/c/../../../../../escape-marker-2",
	"ünïcødé/日本語/😀",
	"space in key",
	"percent%2Fslash",
	"question?mark",
	"hash#tag",
	"semi;colon=equals&amp",
	"plus+sign",
	"tilde~star*",
	"back\\slash",
	"quote\"apos'",
	"...",
	"dir/..",
	"dir/.",
	strings.Repeat("k", 1024),
	strings.Repeat("ü", 512), // 1024 bytes in UTF-8
}

func TestHostileKeys(t *testing.T) {
	parent := t.TempDir()
	dataDir := filepath.Join(parent, "data")
	srv := startServer(t, dataDir)
	c := srv.createTenant(t, "alice")
	a := srv.sdk(c)
	mc := srv.minio(t, c)
	ctx := ctxT(t)
	mkBucket(t, a, "hostile")

	for i, k := range hostileKeys {
		body := pattern(k, 100+i)
		if _, err := a.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("hostile"), Key: aws.String(k), Body: bytes.NewReader(body)}); err != nil {
			t.Errorf("PutObject %q: %v", truncKey(k), err)
			continue
		}
		assertContent(t, a, "hostile", k, body)
		// A second client encodes paths its own way.
		o, err := mc.GetObject(ctx, "hostile", k, minio.GetObjectOptions{})
		if err != nil {
			t.Errorf("minio GetObject %q: %v", truncKey(k), err)
			continue
		}
		got, err := io.ReadAll(o)
		o.Close()
		if err != nil || !bytes.Equal(got, body) {
			t.Errorf("minio GetObject %q: %d bytes, %v; want %d bytes", truncKey(k), len(got), err, len(body))
		}
	}
	listed := listAll(t, a, "hostile", "")
	if !sameSet(listed, hostileKeys) {
		t.Errorf("listing does not round-trip the keys exactly:\n got %q\nwant %q", listed, hostileKeys)
	}
	// "a//b" and "a/b" are different keys; so are "a/../b" and "b".
	assertAbsent(t, a, "hostile", "a/b")
	assertAbsent(t, a, "hostile", "b")
	assertAbsent(t, a, "hostile", "x")

	// Nothing was written outside the data directory.
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "data" {
			t.Errorf("found %q next to the data directory: a key escaped it", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(os.TempDir(), "escape-marker")); err == nil {
		t.Errorf("%s exists: a key escaped the data directory", filepath.Join(os.TempDir(), "escape-marker"))
	}

	// 1025 bytes is one too many, in ASCII and in UTF-8.
	for _, k := range []string{strings.Repeat("k", 1025), strings.Repeat("ü", 512) + "k"} {
		_, err := a.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("hostile"), Key: aws.String(k), Body: strings.NewReader("x")})
		wantErr(t, "PutObject 1025-byte key", err, "KeyTooLongError", http.StatusBadRequest)
		assertAbsentList(t, a, "hostile", k)
	}

	for _, k := range hostileKeys {
		if _, err := a.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("hostile"), Key: aws.String(k)}); err != nil {
			t.Errorf("DeleteObject %q: %v", truncKey(k), err)
		}
	}
	if left := listAll(t, a, "hostile", ""); len(left) != 0 {
		t.Errorf("after deleting every key, listing = %q", left)
	}
	if _, err := a.DeleteBucket(context.Background(), &s3.DeleteBucketInput{Bucket: aws.String("hostile")}); err != nil {
		t.Errorf("DeleteBucket after deleting hostile keys: %v", err)
	}
}

// assertAbsentList fails if key appears in the bucket's listing.
func assertAbsentList(t *testing.T, c *s3.Client, bucket, key string) {
	t.Helper()
	for _, k := range listAll(t, c, bucket, key[:1]) {
		if k == key {
			t.Errorf("key %q is listed; want it absent", truncKey(key))
		}
	}
}
