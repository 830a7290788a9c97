package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/storage/s3/s3test"
)

// Integrity end to end (issue 22 item 5): every stored block carries a
// CRC32C checked before any of its bytes leave a GET. A flipped byte in a
// data file ends the answer with an error, never serves the flipped byte,
// and counts in facet_integrity_failures_total.

const integrityBlock = 256 << 10 // integrity.BlockSize

func seededBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// flipStored flips the byte at off of want in the one file under dir that
// holds want (a data file of the fs backend, an object file of versitygw).
func flipStored(t *testing.T, dir string, want []byte, off int) {
	t.Helper()
	found := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if st, err := d.Info(); err != nil || st.Size() < int64(len(want)) {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		i := bytes.Index(b, want)
		if i < 0 {
			return nil
		}
		b[i+off] ^= 0x20
		found++
		return os.WriteFile(path, b, 0o640)
	})
	if err != nil || found != 1 {
		t.Fatalf("flip: %d files hold the object (%v)", found, err)
	}
}

// readAllOf GETs key (over rng, "" for all) and returns the bytes that
// arrived and how the answer ended.
func readAllOf(cli *s3.Client, bucket, key, rng string) ([]byte, error) {
	in := &s3.GetObjectInput{Bucket: &bucket, Key: &key}
	if rng != "" {
		in.Range = &rng
	}
	out, err := cli.GetObject(context.Background(), in, func(o *s3.Options) { o.RetryMaxAttempts = 1 })
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

func serverErrorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// checkFlipped runs the flipped-byte checks on a server whose stored files
// live under storeDir.
func checkFlipped(t *testing.T, s *server, c creds, storeDir, backend string) {
	cli := s.sdk(c)
	mkBucket(t, cli, "integ")
	// An intact object and an intact bucket the scrubber reads as ok.
	fine := seededBytes(integrityBlock+10, 5)
	putBytes(t, cli, "integ", "fine", fine)
	mkBucket(t, cli, "integ-ok")
	putBytes(t, cli, "integ-ok", "fine", fine)

	// A small object: damage is found before the answer starts.
	small := seededBytes(4096, 1)
	putBytes(t, cli, "integ", "small", small)
	flipStored(t, storeDir, small, 4000)
	if _, err := readAllOf(cli, "integ", "small", ""); serverErrorCode(err) != "InternalError" {
		t.Fatalf("GET of a damaged small object: %v, want InternalError", err)
	}

	// A multi-block object damaged in its third block: the answer has
	// started, so it is cut short after the two good blocks.
	big := seededBytes(4*integrityBlock+123, 2)
	putBytes(t, cli, "integ", "big", big)
	bad := 2*integrityBlock + 77
	flipStored(t, storeDir, big, bad)
	got, err := readAllOf(cli, "integ", "big", "")
	if err == nil {
		t.Fatal("GET of a damaged object read to the end without error")
	}
	if len(got) > bad || !bytes.Equal(got, big[:len(got)]) {
		t.Fatalf("GET of a damaged object served %d bytes that differ from the object's first bytes (damage at %d)", len(got), bad)
	}
	if _, err := readAllOf(cli, "integ", "big", "bytes=524300-524400"); err == nil {
		t.Fatal("a range over the damaged block was served")
	}
	// A copy of the damaged object fails and writes nothing.
	if _, err := cli.CopyObject(context.Background(), &s3.CopyObjectInput{Bucket: aws.String("integ"), Key: aws.String("big-copy"),
		CopySource: aws.String("integ/big")}, func(o *s3.Options) { o.RetryMaxAttempts = 1 }); err == nil {
		t.Fatal("a copy of a damaged object succeeded")
	}
	if _, err := cli.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("integ"), Key: aws.String("big-copy")}); err == nil {
		t.Fatal("the failed copy left an object")
	}
	got, err = readAllOf(cli, "integ", "big", "bytes=300000-400000")
	if err != nil || !bytes.Equal(got, big[300000:400001]) {
		t.Fatalf("a range over good blocks: %d bytes, %v", len(got), err)
	}

	// A multipart object whose parts are not multiples of the block,
	// damaged in its second part.
	p1, p2 := seededBytes(5<<20+1000, 3), seededBytes(1<<20+5, 4)
	up := manager.NewUploader(cli, func(u *manager.Uploader) { u.PartSize = 5<<20 + 1000; u.Concurrency = 1 })
	if _, err := up.Upload(context.Background(), &s3.PutObjectInput{Bucket: aws.String("integ"), Key: aws.String("mp"),
		Body: bytes.NewReader(append(append([]byte{}, p1...), p2...))}); err != nil {
		t.Fatal(err)
	}
	flipStored(t, storeDir, p2, integrityBlock+9)
	off := len(p1) + integrityBlock + 9
	if _, err := readAllOf(cli, "integ", "mp", "bytes="+strconv.Itoa(off-5)+"-"+strconv.Itoa(off+5)); err == nil {
		t.Fatal("a range over the multipart object's damaged block was served")
	}
	got, err = readAllOf(cli, "integ", "mp", "bytes="+strconv.Itoa(len(p1)-100)+"-"+strconv.Itoa(len(p1)+100))
	if err != nil || !bytes.Equal(got, append(append([]byte{}, p1[len(p1)-100:]...), p2[:101]...)) {
		t.Fatalf("a range across the part boundary: %v", err)
	}
	got, err = readAllOf(cli, "integ", "mp", "")
	if err == nil || !bytes.Equal(got, append(append([]byte{}, p1...), p2...)[:len(got)]) || len(got) > off {
		t.Fatalf("whole GET of the damaged multipart object: %d bytes, %v", len(got), err)
	}

	n, ok := s.metricValue(t, `facet_integrity_failures_total{backend="`+backend+`",tenant="`+c.Tenant+`"}`)
	if !ok || n < 6 {
		t.Fatalf("facet_integrity_failures_total = %v (%v), want at least 6", n, ok)
	}

	// The scrubber finds exactly the three damaged objects.
	rep := scrub(t, s, "--tenant", c.Tenant)
	var damaged []string
	for _, f := range rep.Findings {
		if f.Result != "damaged" || f.Bucket != "integ" || f.Tenant != c.Tenant {
			t.Errorf("finding %+v", f)
		}
		damaged = append(damaged, f.Key)
	}
	slices.Sort(damaged)
	if rep.State != "done" || rep.Buckets != 2 || rep.Objects != 5 || rep.OK != 2 || rep.Damaged != 3 || rep.Missing != 0 || rep.Unverified != 0 ||
		!slices.Equal(damaged, []string{"big", "mp", "small"}) {
		t.Fatalf("scrub report %+v", rep)
	}
	// A bucket's scrub covers that bucket alone.
	if rep := scrub(t, s, "--bucket", "integ-ok"); rep.Objects != 1 || rep.OK != 1 || len(rep.Findings) != 0 {
		t.Fatalf("scrub of the intact bucket: %+v", rep)
	}
	if out, err := s.ctl(t, "scrub", "--bucket", "no-such-bucket"); err == nil {
		t.Fatalf("scrub of a missing bucket: %s", out)
	}
	var last admin.ScrubReport
	if out, err := s.ctl(t, "scrub", "status", "-o", "json"); err != nil || json.Unmarshal(out, &last) != nil || last.Bucket != "integ-ok" {
		t.Fatalf("scrub status: %s %v", out, err)
	}
	if v, _ := s.metricValue(t, `facet_scrub_objects_total{result="damaged"}`); v != 3 {
		t.Fatalf("facet_scrub_objects_total{result=damaged} = %v", v)
	}
}

// scrub runs facet ctl scrub --wait with args and returns its report.
func scrub(t *testing.T, s *server, args ...string) admin.ScrubReport {
	t.Helper()
	out, err := s.ctl(t, append([]string{"scrub", "--wait", "-o", "json"}, args...)...)
	if err != nil {
		t.Fatalf("facet ctl scrub %v: %v\n%s", args, err, out)
	}
	var rep admin.ScrubReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("scrub report %s: %v", out, err)
	}
	return rep
}

func TestIntegrityFlippedByte(t *testing.T) {
	if gatewayTarget() {
		t.Skip("looks into the data directory")
	}
	s := startServer(t, t.TempDir())
	c := s.createTenant(t, "integ1")
	checkFlipped(t, s, c, filepath.Join(s.dataDir, "objects"), "fs")
}

func TestIntegrityFlippedByteRemote(t *testing.T) {
	remote := s3test.Start(t)
	s := &server{t: t, dataDir: t.TempDir(), s3Addr: freeAddr(t), adminAddr: freeAddr(t), token: "e2e-admin-" + randHex(16), done: make(chan struct{})}
	if err := s.launch([]string{"serve", "--data", s.dataDir, "--s3-addr", s.s3Addr, "--admin-addr", s.adminAddr,
		"--admin-token", s.token, "--backend", remote.URL("gw")}, nil); err != nil {
		t.Fatal(err)
	}
	c := s.createTenant(t, "integ2")
	checkFlipped(t, s, c, remote.Dir, "s3")
}

// Under an encryption policy the user metadata (x-amz-meta-*) is stored
// sealed: no file under the data directory holds a value in clear, and
// HEAD, GET and a copy answer it as written.
func TestEncryptionSealsUserMetadata(t *testing.T) {
	if gatewayTarget() {
		t.Skip("looks into the data directory")
	}
	dataDir := t.TempDir()
	s := startServer(t, dataDir)
	secret := sealedMetadataWorkload(t, s)
	// Stop the server so that everything is on disk, then look. (The copy
	// into the plain bucket holds the first value in clear, as it should.)
	if _, err := s.terminate(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{secret + "-put", secret + "-copy", secret + "-self"} {
		if hits := filesContaining(t, dataDir, []byte(v)); len(hits) != 0 {
			t.Fatalf("a sealed metadata value is in clear in %q", hits)
		}
	}
	// The check can see: the plain bucket's value is in the index.
	if hits := filesContaining(t, dataDir, []byte(secret+"-clear")); len(hits) == 0 {
		t.Fatal("the unencrypted object's metadata value is found nowhere: the search sees nothing")
	}
}

// Over the remote backend the store's own metadata for the objects (and
// Facet's metadata sidecars) holds the sealed values only.
func TestEncryptionSealsUserMetadataRemote(t *testing.T) {
	remote := s3test.Start(t)
	s := &server{t: t, dataDir: t.TempDir(), s3Addr: freeAddr(t), adminAddr: freeAddr(t), token: "e2e-admin-" + randHex(16), done: make(chan struct{})}
	if err := s.launch([]string{"serve", "--data", s.dataDir, "--s3-addr", s.s3Addr, "--admin-addr", s.adminAddr,
		"--admin-token", s.token, "--backend", remote.URL("gw")}, nil); err != nil {
		t.Fatal(err)
	}
	secret := sealedMetadataWorkload(t, s)
	ctx := context.Background()
	var seen strings.Builder
	p := s3.NewListObjectsV2Paginator(remote.Client, &s3.ListObjectsV2Input{Bucket: &remote.Bucket})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			out, err := remote.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: &remote.Bucket, Key: o.Key})
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(out.Body)
			out.Body.Close()
			seen.WriteString(*o.Key + " " + string(body) + "\n")
			for k, v := range out.Metadata {
				// Facet's inline metadata is base64url JSON.
				if js, err := base64.RawURLEncoding.DecodeString(v); err == nil {
					v = string(js)
				}
				seen.WriteString(k + "=" + v + "\n")
			}
		}
	}
	for _, v := range []string{secret + "-put", secret + "-copy", secret + "-self"} {
		if strings.Contains(seen.String(), v) {
			t.Fatalf("a sealed metadata value is in clear in the remote store")
		}
	}
	if !strings.Contains(seen.String(), secret+"-clear") {
		t.Fatal("the unencrypted object's metadata value is found nowhere in the remote store: the search sees nothing")
	}
}

// sealedMetadataWorkload writes objects with user metadata in a bucket
// under encryption and in a plain one, checks what HEAD, GET and copies
// answer, and returns the marker the values start with.
func sealedMetadataWorkload(t *testing.T, s *server) string {
	t.Helper()
	c := s.createTenant(t, "um1")
	cli := s.sdk(c)
	mkBucket(t, cli, "sealed")
	mkBucket(t, cli, "plain")
	s.policyAdd(t, "FOR BUCKET um1/sealed DO SET encryption")
	secret := "FACET-META-MARKER-" + randHex(8)
	clearValue := secret + "-clear"
	ctx := context.Background()
	put := func(bucket, key, v string) {
		if _, err := cli.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(seededBytes(70_000, 8)),
			Metadata: map[string]string{"secret": v, "other": "x"}}); err != nil {
			t.Fatal(err)
		}
	}
	put("sealed", "obj", secret)
	put("sealed", "obj2", secret+"-put")
	put("plain", "obj", clearValue)
	// A copy within the encrypted bucket, replacing the metadata.
	if _, err := cli.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("sealed"), Key: aws.String("copy"), CopySource: aws.String("sealed/obj"),
		MetadataDirective: "REPLACE", Metadata: map[string]string{"secret": secret + "-copy"}}); err != nil {
		t.Fatal(err)
	}
	// A copy of the sealed object into the plain bucket keeps its
	// metadata, in clear there (no encryption policy).
	if _, err := cli.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("plain"), Key: aws.String("from-sealed"), CopySource: aws.String("sealed/obj")}); err != nil {
		t.Fatal(err)
	}
	head := func(bucket, key string) map[string]string {
		out, err := cli.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
		if err != nil {
			t.Fatalf("HEAD %s/%s: %v", bucket, key, err)
		}
		return out.Metadata
	}
	if m := head("sealed", "obj"); m["secret"] != secret || m["other"] != "x" {
		t.Fatalf("HEAD of the sealed object: %v", m)
	}
	if m := head("sealed", "obj2"); m["secret"] != secret+"-put" {
		t.Fatalf("HEAD of the second sealed object: %v", m)
	}
	if m := head("sealed", "copy"); m["secret"] != secret+"-copy" {
		t.Fatalf("HEAD of the copy: %v", m)
	}
	if m := head("plain", "from-sealed"); m["secret"] != secret {
		t.Fatalf("HEAD of the copy into the plain bucket: %v", m)
	}
	out, err := cli.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("sealed"), Key: aws.String("obj")})
	if err != nil || out.Metadata["secret"] != secret {
		t.Fatalf("GET of the sealed object: %v %v", out, err)
	}
	out.Body.Close()
	// Metadata replaced on the object itself (copy onto itself) stays
	// sealed.
	if _, err := cli.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("sealed"), Key: aws.String("obj"), CopySource: aws.String("sealed/obj"),
		MetadataDirective: "REPLACE", Metadata: map[string]string{"secret": secret + "-self"}}); err != nil {
		t.Fatal(err)
	}
	if m := head("sealed", "obj"); m["secret"] != secret+"-self" {
		t.Fatalf("HEAD after replacing the metadata: %v", m)
	}
	return secret
}
