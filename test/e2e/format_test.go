package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	bolt "go.etcd.io/bbolt"
)

// TestOpensPreviousFormat opens a data directory written before the
// stores recorded a format version (testdata/format0, see its README):
// `facet migrate --dry-run` says what it would do and changes no byte,
// `facet serve` migrates it at start and serves every object as written
// (one of them by its compression + encryption plan), and a store that
// claims a newer format is refused with a message saying what to do,
// unchanged.
func TestOpensPreviousFormat(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-C", dir, "-xzf", filepath.Join("testdata", "format0", "data.tgz")).CombinedOutput(); err != nil {
		t.Fatalf("unpack fixture: %v\n%s", err, out)
	}
	stores := []string{filepath.Join(dir, "meta.db"), filepath.Join(dir, "objects", "index.db")}
	sums := func() string {
		var all []string
		for _, p := range stores {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			s := sha256.Sum256(b)
			all = append(all, hex.EncodeToString(s[:]))
		}
		return strings.Join(all, " ")
	}
	migrate := func(args ...string) (string, error) {
		cmd := exec.Command(facetBin, append([]string{"migrate", "--data", dir}, args...)...)
		cmd.Env = append(os.Environ(), "FACET_MASTER_KEY=", "FACET_META=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	before := sums()
	out, err := migrate("--dry-run")
	if err != nil {
		t.Fatalf("migrate --dry-run: %v\n%s", err, out)
	}
	for _, want := range []string{"meta.db: format 0, would migrate to 1", "index.db: format 0, would migrate to 2", "format 0 -> 1: record the format version", "dry run: nothing changed"} {
		if !strings.Contains(out, want) {
			t.Errorf("migrate --dry-run output lacks %q:\n%s", want, out)
		}
	}
	if sums() != before {
		t.Fatal("migrate --dry-run changed a store")
	}

	// serve migrates at start.
	s := startServerEnv(t, dir, "", []string{"FACET_MASTER_KEY="})
	cl := s.sdk(creds{Tenant: "acme", AccessKey: "FKTDGDDW4ADZ3O76M5MM", SecretKey: "ertxwVcbaeB7gjOHt3pzgqB3MxZfWY62rPbtloxc"})
	ctx := ctxT(t)
	for key, want := range map[string]string{
		"docs/plain.txt": "ff7ea1fb5804b490e723eb58a03700b08d4006b75d608e9db265baab000425f4",
		"blob.bin":       "7a35fc36e3193134fa3556c7ffabf5735efc185e6e3b44f20034897d362f81ed",
		"sealed.txt":     "ff7ea1fb5804b490e723eb58a03700b08d4006b75d608e9db265baab000425f4",
	} {
		got, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("fixture"), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("GET %s: %v", key, err)
		}
		h := sha256.New()
		_, err = io.Copy(h, got.Body)
		got.Body.Close()
		if err != nil {
			t.Fatalf("GET %s: %v", key, err)
		}
		if sum := hex.EncodeToString(h.Sum(nil)); sum != want {
			t.Errorf("GET %s: sha256 %s, want %s", key, sum, want)
		}
		if key == "blob.bin" && got.Metadata["owner"] != "fixture" {
			t.Errorf("GET blob.bin: metadata %v, want owner=fixture", got.Metadata)
		}
	}
	if !bytes.Contains(s.logBytes(), []byte("metadata store migrated")) || !bytes.Contains(s.logBytes(), []byte("object index migrated")) {
		t.Errorf("the start-up log does not report the migrations:\n%s", s.logTail(30))
	}
	if code, err := s.terminate(20 * time.Second); err != nil || code != 0 {
		t.Fatalf("stopping serve: exit %d, %v", code, err)
	}

	out, err = migrate("--dry-run")
	if err != nil || !strings.Contains(out, "meta.db: format 1, current") || !strings.Contains(out, "index.db: format 2, current") {
		t.Fatalf("after serve, migrate --dry-run: %v\n%s", err, out)
	}

	// A newer release's store: refused, by migrate and by serve, unchanged.
	db, err := bolt.Open(stores[0], 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("system")).Put([]byte("format_version"), []byte("99"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	newer := sums()
	out, err = migrate()
	if err == nil || !strings.Contains(out, "has format 99, and this binary reads formats up to 1") {
		t.Fatalf("migrate of a newer store: %v\n%s", err, out)
	}
	cmd := exec.Command(facetBin, "serve", "--data", dir, "--s3-addr", freeAddr(t), "--admin-addr", freeAddr(t), "--nbd-addr", "off")
	cmd.Env = append(os.Environ(), "FACET_MASTER_KEY=")
	out2, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out2), "has format 99") || !strings.Contains(string(out2), "restore a backup made before the upgrade") {
		t.Fatalf("serve on a newer store: %v\n%s", err, out2)
	}
	if sums() != newer {
		t.Fatal("a refused newer store was changed")
	}
}
