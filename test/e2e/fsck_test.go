package e2e

import (
	"bytes"
	"crypto/rand"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestFsck: `facet ctl fsck` checks a running server clean; a byte
// flipped in a data file is found by `facet ctl fsck --verify` (exit 1,
// the object named) and by the offline `facet fsck`, which --repair does
// not "repair" away: damage is reported, never hidden.
func TestFsck(t *testing.T) {
	dir := t.TempDir()
	token := "e2e-admin-" + randHex(16)
	s := startServerEnv(t, dir, token, []string{})
	c := s.createTenant(t, "acme")
	cl := s.sdk(c)
	ctx := ctxT(t)
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("fsck-bucket")}); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 777_777)
	_, _ = rand.Read(body)
	for _, k := range []string{"victim", "bystander"} {
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("fsck-bucket"), Key: aws.String(k), Body: bytes.NewReader(body[:len(body)-len(k)])}); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := s.ctl(t, "fsck", "--verify"); err != nil || !strings.Contains(string(out), "2 verified") || !strings.Contains(string(out), "0 of damage") {
		t.Fatalf("ctl fsck of a healthy server: %v\n%s", err, out)
	}

	// The victim's file is the one of its size.
	var victim string
	_ = filepath.WalkDir(filepath.Join(dir, "objects", "data"), func(p string, d fs.DirEntry, err error) error {
		if info, ierr := d.Info(); err == nil && ierr == nil && !d.IsDir() && info.Size() == int64(len(body)-len("victim")) {
			victim = p
		}
		return nil
	})
	if victim == "" {
		t.Fatal("victim's data file not found")
	}
	f, err := os.OpenFile(victim, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := []byte{0}
	if _, err := f.ReadAt(b, 400_000); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x20
	if _, err := f.WriteAt(b, 400_000); err != nil {
		t.Fatal(err)
	}
	f.Close()

	out, err := s.ctl(t, "fsck", "--verify")
	if err == nil || !strings.Contains(string(out), "checksum") || !strings.Contains(string(out), "fsck-bucket/victim") || strings.Contains(string(out), "bystander") {
		t.Fatalf("ctl fsck --verify after a flipped byte: %v\n%s", err, out)
	}
	if code, err := s.terminate(20 * time.Second); err != nil || code != 0 {
		t.Fatalf("stop: %d, %v", code, err)
	}
	for _, args := range [][]string{{"fsck", "--data", dir}, {"fsck", "--data", dir, "--repair"}} {
		out, err := exec.Command(facetBin, args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "checksum") || !strings.Contains(string(out), "1 of damage") {
			t.Fatalf("facet %v: %v\n%s", args, err, out)
		}
	}
}
