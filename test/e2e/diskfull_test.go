package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// TestDiskFull runs `facet serve` on a real, small filesystem (a 32 MiB
// tmpfs the test mounts) and fills it: the PUT that does not fit answers
// 507 InsufficientStorage and leaves nothing behind (no object, no torn
// file: facet fsck finds no damage); every acknowledged object still
// reads back, listings and deletes work while the disk is full, and PUTs
// succeed again once deletes have made room.
func TestDiskFull(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=32m,mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("not run: the disk-full test mounts a 32 MiB tmpfs, which needs root here: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	data := filepath.Join(dir, "data")
	token := "e2e-admin-" + randHex(16)
	s := startServerEnv(t, data, token, []string{})
	c := s.createTenant(t, "full")
	cl := s.sdk(c)
	ctx := ctxT(t)
	bucket := aws.String("full-disk")
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket}); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 1<<20)
	_, _ = rand.Read(body)
	var acked []string
	var full error
	for i := 0; i < 64 && full == nil; i++ {
		key := fmt.Sprintf("obj-%03d", i)
		_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String(key), Body: bytes.NewReader(body)})
		if err != nil {
			full = err
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != "InsufficientStorage" {
				t.Fatalf("PUT %s on a full disk: %v; want InsufficientStorage", key, err)
			}
			if _, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: aws.String(key)}); err == nil {
				t.Fatalf("the refused PUT %s left an object", key)
			}
			break
		}
		acked = append(acked, key)
	}
	if full == nil {
		t.Fatal("64 MiB of PUTs fit on a 32 MiB filesystem")
	}
	if len(acked) < 4 {
		t.Fatalf("only %d PUTs fit before the disk was full", len(acked))
	}
	t.Logf("%d MiB acknowledged before the disk was full: %v", len(acked), full)

	readAll := func() {
		t.Helper()
		for _, key := range acked {
			got, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String(key)})
			if err != nil {
				t.Fatalf("GET %s on a full disk: %v", key, err)
			}
			b, err := io.ReadAll(got.Body)
			got.Body.Close()
			if err != nil || !bytes.Equal(b, body) {
				t.Fatalf("GET %s: %d bytes, %v", key, len(b), err)
			}
		}
	}
	readAll()
	waitStorage(t, s, http.StatusOK, "full")
	l, err := cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: bucket})
	if err != nil || len(l.Contents) != len(acked) {
		t.Fatalf("list on a full disk: %v, %d keys for %d acknowledged", err, len(l.Contents), len(acked))
	}
	// Deletes work while full, and make room.
	for _, key := range acked[:3] {
		if _, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: aws.String(key)}); err != nil {
			t.Fatalf("DELETE %s on a full disk: %v", key, err)
		}
	}
	acked = acked[3:]
	if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String("after-room"), Body: bytes.NewReader(body)}); err != nil {
		t.Fatalf("PUT after deletes made room: %v", err)
	}
	acked = append(acked, "after-room")
	readAll()

	// A disk gone read-only: /healthz says so (503) and /v1/nodes names
	// it; reads go on; once writable again, so is the node.
	// The index stays open for writing, which forbids remounting the
	// whole filesystem read-only; a read-only bind mount of the data
	// files' directory is what the server sees of a disk gone read-only.
	files := filepath.Join(data, "objects", "data")
	mount := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
			t.Fatalf("mount %v: %v: %s", args, err, out)
		}
	}
	mount("--bind", files, files)
	t.Cleanup(func() { _ = exec.Command("umount", "-l", files).Run() })
	mount("-o", "remount,bind,ro", files)
	waitStorage(t, s, http.StatusServiceUnavailable, "read-only")
	if out, err := s.ctl(t, "node", "list", "-o", "json"); err != nil || !strings.Contains(string(out), `"storage": "read-only"`) && !strings.Contains(string(out), `"storage":"read-only"`) {
		t.Errorf("ctl node list with a read-only disk: %v\n%s", err, out)
	}
	if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String("on-ro"), Body: bytes.NewReader(body[:10])}); err == nil {
		t.Error("a PUT succeeded on a read-only disk")
	}
	readAll()
	if out, err := exec.Command("umount", files).CombinedOutput(); err != nil {
		t.Fatalf("umount %s: %v: %s", files, err, out)
	}
	waitStorage(t, s, http.StatusOK, "writable")

	if code, err := s.terminate(20 * time.Second); err != nil || code != 0 {
		t.Fatalf("stop: %d, %v", code, err)
	}
	out, err := exec.Command(facetBin, "fsck", "--data", data).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "0 of damage") {
		t.Fatalf("facet fsck after the disk was full: %v\n%s", err, out)
	}
}

// waitStorage polls the server's /healthz (which probes at most every
// 2 s) until it answers code with the storage state want.
func waitStorage(t *testing.T, s *server, code int, want string) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get("http://" + s.adminAddr + "/healthz")
		if err != nil {
			last = err.Error()
			continue
		}
		var h struct{ Status, Storage string }
		err = json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		last = fmt.Sprintf("%d %+v %v", resp.StatusCode, h, err)
		if resp.StatusCode == code && h.Storage == want {
			return
		}
	}
	t.Fatalf("/healthz never answered %d with storage %q; last: %s", code, want, last)
}
