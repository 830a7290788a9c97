package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Policies and filters against a real `facet serve` (issue 3): what lands
// on disk, what survives a restart, what a flipped byte does, and that one
// tenant's policies leave another's data alone.

// storedPolicy is a policy as `facet ctl policy add|list -o json` prints it.
type storedPolicy struct {
	ID    string `json:"id"`
	Text  string `json:"text"`
	State string `json:"state"`
}

func (s *server) policyAdd(t *testing.T, text string) []storedPolicy {
	t.Helper()
	out, err := s.ctl(t, "policy", "add", text, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Policies []storedPolicy `json:"policies"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.Policies) == 0 {
		t.Fatalf("policy add -o json: %v\n%s", err, out)
	}
	return res.Policies
}

func (s *server) policyList(t *testing.T) []storedPolicy {
	t.Helper()
	out, err := s.ctl(t, "policy", "list", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Policies []storedPolicy `json:"policies"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("policy list -o json: %v\n%s", err, out)
	}
	return res.Policies
}

// putFilters returns the PUT pipeline explain shows for an object, as
// "stage:filter" in running order.
func (s *server) putFilters(t *testing.T, tenant, bucket, key string) []string {
	t.Helper()
	out, err := s.ctl(t, "policy", "explain", "--tenant", tenant, "--bucket", bucket, "--key", key, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var ex struct {
		Pipelines []struct {
			Method  string `json:"method"`
			Stage   string `json:"stage"`
			Filters []struct {
				Filter string `json:"filter"`
			} `json:"filters"`
		} `json:"pipelines"`
	}
	if err := json.Unmarshal(out, &ex); err != nil {
		t.Fatalf("policy explain -o json: %v\n%s", err, out)
	}
	got := []string{}
	for _, stage := range []string{"gateway", "storage"} {
		for _, p := range ex.Pipelines {
			if p.Method == "PUT" && p.Stage == stage {
				for _, f := range p.Filters {
					got = append(got, stage+":"+f.Filter)
				}
			}
		}
	}
	return got
}

type tenantUsage struct {
	StoredBytes  int64 `json:"stored_bytes"`
	LogicalBytes int64 `json:"logical_bytes"`
	Objects      int64 `json:"objects"`
}

func (s *server) usage(t *testing.T, tenant string) tenantUsage {
	t.Helper()
	out, err := s.ctl(t, "tenant", "usage", tenant, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var u tenantUsage
	if err := json.Unmarshal(out, &u); err != nil {
		t.Fatalf("tenant usage -o json: %v\n%s", err, out)
	}
	return u
}

// putStored PUTs body and returns what the object takes on disk (the
// tenant's stored bytes before and after) and the data file it created.
func (s *server) putStored(t *testing.T, c *s3.Client, tenant, bucket, key string, body []byte) (int64, string) {
	t.Helper()
	before, files := s.usage(t, tenant), objectFiles(t, s.dataDir)
	if etag := putBytes(t, c, bucket, key, body); etag != quotedETag(body) {
		t.Errorf("PUT %s/%s: ETag %s; want %s (the client's MD5)", bucket, key, etag, quotedETag(body))
	}
	after := s.usage(t, tenant)
	if after.LogicalBytes-before.LogicalBytes != int64(len(body)) {
		t.Errorf("PUT %s/%s of %d bytes moved logical bytes %d -> %d", bucket, key, len(body), before.LogicalBytes, after.LogicalBytes)
	}
	var created []string
	for _, f := range objectFiles(t, s.dataDir) {
		if !slices.Contains(files, f) {
			created = append(created, f)
		}
	}
	if len(created) != 1 {
		t.Fatalf("PUT %s/%s created data files %q; want exactly one", bucket, key, created)
	}
	return after.StoredBytes - before.StoredBytes, created[0]
}

// objectFiles lists the object data files of a data directory.
func objectFiles(t *testing.T, dataDir string) []string {
	t.Helper()
	root := filepath.Join(dataDir, "objects", "data")
	if _, err := os.Stat(root); os.IsNotExist(err) {
		return nil
	}
	return dataFiles(t, root, "")
}

// filesContaining lists the files under dir that contain needle.
func filesContaining(t *testing.T, dir string, needle []byte) []string {
	t.Helper()
	var hits []string
	for _, f := range dataFiles(t, dir, "") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, needle) {
			hits = append(hits, f)
		}
	}
	return hits
}

// logText returns n bytes of log lines that each carry marker: redundant
// like real logs, with enough variety not to be constant.
func logText(marker string, n int) []byte {
	r := rand.New(rand.NewPCG(uint64(len(marker)), uint64(n)))
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "2026-03-01T10:%02d:%02dZ host-%d GET /api/v1/items/%d status=%d dur=%.3fms %s\n",
			i/60%60, i%60, r.IntN(9), r.IntN(100000), []int{200, 200, 404, 500}[r.IntN(4)], r.Float64()*30, marker)
	}
	return b.Bytes()[:n]
}

// getOutcome is a GET's answer, read to the end or to the first error.
type getOutcome struct {
	status  int
	length  int64 // Content-Length, -1 when absent
	body    []byte
	readErr error
}

// rawGet GETs an object with a hand-signed request, so that no client-side
// checksum validation stands between the test and what the server sent.
func (s *server) rawGet(t *testing.T, c creds, bucket, key, rng string) getOutcome {
	t.Helper()
	req := s.newRaw(t, http.MethodGet, "/"+bucket+"/"+urlPathEscape(key), nil)
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	sign(t, req, c, sha256hex(nil), time.Now())
	resp, err := rawClient.Do(req)
	if err != nil {
		return getOutcome{status: -1, readErr: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return getOutcome{status: resp.StatusCode, length: resp.ContentLength, body: b, readErr: err}
}

// failed reports whether the client could tell the GET went wrong: an
// error status, or a body cut short of its Content-Length.
func (o getOutcome) failed() bool {
	return o.status < 200 || o.status > 299 || o.readErr != nil || o.length < 0 || int64(len(o.body)) != o.length
}

func (o getOutcome) String() string {
	return fmt.Sprintf("status %d, Content-Length %d, %d body bytes, read error %v", o.status, o.length, len(o.body), o.readErr)
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func TestPolicyEncryptionAtRest(t *testing.T) {
	dataDir := t.TempDir()
	srv := startServer(t, dataDir)
	c := srv.createTenant(t, "t1")
	cl := srv.sdk(c)
	mkBucket(t, cl, "vault")
	srv.policyAdd(t, "FOR TENANT t1 DO SET encryption")
	if got := srv.putFilters(t, "t1", "vault", "k"); len(got) != 1 || !strings.HasSuffix(got[0], ":encryption") {
		t.Fatalf("explain after SET encryption: %q", got)
	}

	marker := "FACET-PLAINTEXT-MARKER-" + randHex(8)
	bodies := map[string][]byte{}
	files := map[string]string{}
	for i, key := range []string{"flip-first", "flip-middle", "flip-last", "untouched"} {
		body := logText(marker, 300_000+i*1000) // several 64 KiB DARE packages
		stored, file := srv.putStored(t, cl, "t1", "vault", key, body)
		if stored <= int64(len(body)) {
			t.Errorf("%s: encrypted object stores %d bytes for %d; want the DARE overhead on top", key, stored, len(body))
		}
		bodies[key], files[key] = body, file
	}
	// A multipart object goes through the filter part by part.
	big := logText(marker, 6<<20)
	up, err := cl.CreateMultipartUpload(ctxT(t), &s3.CreateMultipartUploadInput{Bucket: aws.String("vault"), Key: aws.String("multipart")})
	if err != nil {
		t.Fatal(err)
	}
	var parts []types.CompletedPart
	for i, chunk := range [][]byte{big[:5<<20], big[5<<20:]} {
		out, err := cl.UploadPart(ctxT(t), &s3.UploadPartInput{Bucket: aws.String("vault"), Key: aws.String("multipart"),
			UploadId: up.UploadId, PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(chunk)})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(int32(i + 1))})
	}
	if _, err := cl.CompleteMultipartUpload(ctxT(t), &s3.CompleteMultipartUploadInput{Bucket: aws.String("vault"), Key: aws.String("multipart"),
		UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatal(err)
	}
	bodies["multipart"] = big

	for key, body := range bodies {
		assertContent(t, cl, "vault", key, body)
	}
	// Nothing under the data directory holds the plaintext: not the data
	// files, not the indexes.
	if hits := filesContaining(t, dataDir, []byte(marker)); len(hits) != 0 {
		t.Fatalf("plaintext marker found on disk in %q", hits)
	}
	if hits := filesContaining(t, dataDir, bodies["untouched"][1000:1064]); len(hits) != 0 {
		t.Fatalf("64 plaintext bytes found on disk in %q", hits)
	}

	// One flipped byte, at the start (the DARE header), in the middle and
	// at the end (the last tag): the GET fails, by status or by a body cut
	// short, and never answers 200 with wrong bytes.
	for key, off := range map[string]int64{
		"flip-first":  0,
		"flip-middle": fileSize(t, files["flip-middle"]) / 2,
		"flip-last":   fileSize(t, files["flip-last"]) - 1,
	} {
		flipByte(t, files[key], off)
		o := srv.rawGet(t, c, "vault", key, "")
		if !o.failed() {
			if bytes.Equal(o.body, bodies[key]) {
				t.Errorf("%s: byte %d flipped on disk, yet GET answered the right bytes (%v): the flip went unnoticed", key, off, o)
			} else {
				t.Errorf("%s: byte %d flipped on disk; GET answered WRONG bytes as a success (%v)", key, off, o)
			}
		} else {
			t.Logf("%s: byte %d flipped: GET %v", key, off, o)
		}
		if o.status == http.StatusOK && !bytes.HasPrefix(bodies[key], o.body) {
			t.Errorf("%s: the truncated body is not a prefix of the object", key)
		}
		// Damage found before the first byte is sent is answered as an
		// error, not a dropped connection.
		if key == "flip-first" && (o.status != http.StatusInternalServerError || xmlErrCode(o.body) != "InternalError") {
			t.Errorf("%s: GET %v, body %s; want 500 InternalError", key, o, truncate(o.body, 300))
		}
	}
	// A range over the damaged package fails as well; a range elsewhere
	// either reads the right bytes or fails, never wrong bytes.
	mid := len(bodies["flip-middle"]) / 2
	if o := srv.rawGet(t, c, "vault", "flip-middle", fmt.Sprintf("bytes=%d-%d", mid-70_000, mid+70_000)); !o.failed() {
		t.Errorf("range over the damaged package of flip-middle: %v; want a failure", o)
	}
	if o := srv.rawGet(t, c, "vault", "flip-last", "bytes=0-99"); !o.failed() && !bytes.Equal(o.body, bodies["flip-last"][:100]) {
		t.Errorf("range far from the damage of flip-last answered wrong bytes: %v", o)
	}
	// The untouched objects still read, and the server is still up.
	assertContent(t, cl, "vault", "untouched", bodies["untouched"])
	assertContent(t, cl, "vault", "multipart", big)
	if srv.exited() {
		t.Fatalf("facet serve exited after reading damaged objects")
	}
}

func TestPolicyKeyRotation(t *testing.T) {
	dataDir := t.TempDir()
	srv := startServer(t, dataDir)
	c := srv.createTenant(t, "t1")
	mkBucket(t, srv.sdk(c), "docs")
	srv.policyAdd(t, "FOR TENANT t1 DO SET encryption ON STORAGE")

	type dataKeys struct {
		Current string `json:"current"`
		History []struct {
			ID string `json:"id"`
		} `json:"history"`
	}
	keysOf := func(out []byte, err error) dataKeys {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var dk dataKeys
		if err := json.Unmarshal(out, &dk); err != nil || dk.Current == "" {
			t.Fatalf("data keys -o json: %v\n%s", err, out)
		}
		return dk
	}
	k0 := keysOf(srv.ctl(t, "key", "data", "t1", "-o", "json"))
	marker := "ROTATION-MARKER-" + randHex(8)
	bodies := map[string][]byte{"before": logText(marker, 200_000)}
	putBytes(t, srv.sdk(c), "docs", "before", bodies["before"])

	k1 := keysOf(srv.ctl(t, "key", "rotate-data", "t1", "-o", "json"))
	if k1.Current == k0.Current {
		t.Fatalf("rotate-data kept the current key id %s", k0.Current)
	}
	var hist []string
	for _, h := range k1.History {
		hist = append(hist, h.ID)
	}
	if !slices.Contains(hist, k0.Current) || !slices.Contains(hist, k1.Current) {
		t.Errorf("after rotation the history is %q; want both %s and %s", hist, k0.Current, k1.Current)
	}
	if got := keysOf(srv.ctl(t, "key", "data", "t1", "-o", "json")); got.Current != k1.Current {
		t.Errorf("key data after rotate-data: current %s; want %s", got.Current, k1.Current)
	}
	bodies["after"] = logText(marker, 210_000)
	putBytes(t, srv.sdk(c), "docs", "after", bodies["after"])
	for k, b := range bodies {
		assertContent(t, srv.sdk(c), "docs", k, b)
	}

	// After a restart (the table reloads the current key id from the store)
	// new objects are sealed under the new key id; all stay readable.
	token := srv.token
	if code, err := srv.terminate(startupTimeout); err != nil || code != 0 {
		t.Fatalf("SIGTERM: exit %d, %v", code, err)
	}
	srv = startServerWithToken(t, dataDir, token)
	bodies["restarted"] = logText(marker, 220_000)
	putBytes(t, srv.sdk(c), "docs", "restarted", bodies["restarted"])
	for k, b := range bodies {
		assertContent(t, srv.sdk(c), "docs", k, b)
	}
	if hits := filesContaining(t, dataDir, []byte(marker)); len(hits) != 0 {
		t.Fatalf("plaintext found on disk in %q", hits)
	}
	// Reverse plans name key ids (never keys): both ids are in use now.
	if code, err := srv.terminate(startupTimeout); err != nil || code != 0 {
		t.Fatalf("SIGTERM: exit %d, %v", code, err)
	}
	index, err := os.ReadFile(filepath.Join(dataDir, "objects", "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{k0.Current, k1.Current} {
		if !bytes.Contains(index, []byte(id)) {
			t.Errorf("no object's reverse plan names key id %s", id)
		}
	}
}

func TestPolicyRestart(t *testing.T) {
	dataDir := t.TempDir()
	srv := startServer(t, dataDir)
	c := srv.createTenant(t, "t1")
	cl := srv.sdk(c)
	mkBucket(t, cl, "logs")
	mkBucket(t, cl, "plain")
	added := srv.policyAdd(t, "FOR TENANT t1 DO SET compression WITH engine=gzip\n"+
		"FOR CONTAINER t1/logs DO SET encryption ON STORAGE\n"+
		"FOR CONTAINER t1/plain DO DELETE compression\n"+
		"FOR TENANT t1 WHEN get_ops > 5 DO SET noop")
	if len(added) != 4 {
		t.Fatalf("policy add of four lines stored %d policies", len(added))
	}
	before := srv.policyList(t)
	marker := "RESTART-MARKER-" + randHex(8)
	old := logText(marker, 1<<20)
	if stored, _ := srv.putStored(t, cl, "t1", "logs", "old", old); stored >= int64(len(old))/2 {
		t.Errorf("before restart: compressed+encrypted object stores %d of %d bytes", stored, len(old))
	}
	wantLogs := []string{"gateway:compression", "storage:encryption"}
	if got := srv.putFilters(t, "t1", "logs", "k"); !slices.Equal(got, wantLogs) {
		t.Fatalf("explain logs before restart: %q; want %q", got, wantLogs)
	}

	token := srv.token
	if code, err := srv.terminate(startupTimeout); err != nil || code != 0 {
		t.Fatalf("SIGTERM: exit %d, %v", code, err)
	}
	srv = startServerWithToken(t, dataDir, token)
	cl = srv.sdk(c)

	after := srv.policyList(t)
	if len(after) != len(before) {
		t.Fatalf("after restart policy list = %+v; want %+v", after, before)
	}
	for i := range before {
		if after[i] != before[i] {
			t.Errorf("after restart policy %d = %+v; want %+v", i, after[i], before[i])
		}
	}
	if got := srv.putFilters(t, "t1", "logs", "k"); !slices.Equal(got, wantLogs) {
		t.Errorf("explain logs after restart: %q; want %q", got, wantLogs)
	}
	if got := srv.putFilters(t, "t1", "plain", "k"); len(got) != 0 {
		t.Errorf("explain plain after restart: %q; want nothing", got)
	}

	// The first PUT after the restart is transformed as before.
	body := logText(marker, 2<<20)
	stored, file := srv.putStored(t, cl, "t1", "logs", "new", body)
	if stored >= int64(len(body))/2 {
		t.Errorf("after restart: object stores %d of %d bytes; want it compressed", stored, len(body))
	}
	if raw, err := os.ReadFile(file); err != nil || bytes.Contains(raw, []byte(marker)) {
		t.Errorf("after restart: the new object's data file holds plaintext (%v)", err)
	}
	plain := logText(marker, 1<<20)
	if stored, file := srv.putStored(t, cl, "t1", "plain", "p", plain); stored != int64(len(plain)) {
		t.Errorf("after restart: plain bucket stores %d of %d bytes; want them as written", stored, len(plain))
	} else if raw, err := os.ReadFile(file); err != nil || !bytes.Equal(raw, plain) {
		t.Errorf("after restart: plain bucket's data file differs from what was written (%v)", err)
	}
	assertContent(t, cl, "logs", "old", old)
	assertContent(t, cl, "logs", "new", body)
	assertContent(t, cl, "plain", "p", plain)
}

func TestPolicyChangeVisibleNextRequest(t *testing.T) {
	srv := startServer(t, t.TempDir())
	c := srv.createTenant(t, "t1")
	cl := srv.sdk(c)
	mkBucket(t, cl, "bkt1")
	mkBucket(t, cl, "bkt2")
	body := logText("next-request", 1<<20)
	for i := range 5 {
		// Each round adds a more specific policy and PUTs at once: the PUT
		// must already run it.
		bucket := []string{"bkt1", "bkt2"}[i%2]
		key := fmt.Sprintf("round-%d", i)
		p := srv.policyAdd(t, fmt.Sprintf("FOR OBJECT t1/%s/%s DO SET compression WITH engine=%s", bucket, key, []string{"gzip", "zstd", "lz4"}[i%3]))
		if stored, _ := srv.putStored(t, cl, "t1", bucket, key, body); stored >= int64(len(body))/2 {
			t.Errorf("round %d: PUT right after %s (%s) stored %d of %d bytes; want it compressed", i, p[0].ID, p[0].Text, stored, len(body))
		}
		// Other keys of the bucket are not touched by an object policy.
		if stored, _ := srv.putStored(t, cl, "t1", bucket, key+"-other", body); stored != int64(len(body)) {
			t.Errorf("round %d: a key the policy does not name stored %d of %d bytes", i, stored, len(body))
		}
	}
	for i := range 5 {
		assertContent(t, cl, []string{"bkt1", "bkt2"}[i%2], fmt.Sprintf("round-%d", i), body)
	}

	t.Run("delete", func(t *testing.T) {
		p := srv.policyAdd(t, "FOR CONTAINER t1/bkt1 DO SET encryption")
		if _, err := srv.ctl(t, "policy", "delete", p[0].ID); err != nil {
			t.Fatal(err)
		}
		if stored, _ := srv.putStored(t, cl, "t1", "bkt1", "after-delete", body); stored != int64(len(body)) {
			t.Errorf("PUT right after deleting %s stored %d of %d bytes; want them as written", p[0].ID, stored, len(body))
		}
	})
}

func TestPolicyTenantIsolation(t *testing.T) {
	dataDir := t.TempDir()
	srv := startServer(t, dataDir)
	c1 := srv.createTenant(t, "t1")
	c2 := srv.createTenant(t, "t2")
	mkBucket(t, srv.sdk(c1), "one")
	mkBucket(t, srv.sdk(c2), "two")
	srv.policyAdd(t, "FOR TENANT t1 DO SET compression ON GATEWAY, SET encryption ON STORAGE")
	if got := srv.putFilters(t, "t2", "two", "k"); len(got) != 0 {
		t.Errorf("explain for t2 shows %q; t1's policy must not reach it", got)
	}

	marker1, marker2 := "T1-MARKER-"+randHex(8), "T2-MARKER-"+randHex(8)
	b1, b2 := logText(marker1, 1<<20), logText(marker2, 1<<20)
	stored1, file1 := srv.putStored(t, srv.sdk(c1), "t1", "one", "x.log", b1)
	stored2, file2 := srv.putStored(t, srv.sdk(c2), "t2", "two", "x.log", b2)
	if stored1 >= int64(len(b1))/2 {
		t.Errorf("t1's object stores %d of %d bytes; want it compressed", stored1, len(b1))
	}
	if stored2 != int64(len(b2)) {
		t.Errorf("t2's object stores %d of %d bytes; want them as written", stored2, len(b2))
	}
	if raw, err := os.ReadFile(file2); err != nil || !bytes.Equal(raw, b2) {
		t.Errorf("t2's data file is not what t2 wrote (%v): t1's policy transformed it", err)
	}
	if raw, err := os.ReadFile(file1); err != nil || bytes.Contains(raw, []byte(marker1)) {
		t.Errorf("t1's data file holds plaintext (%v)", err)
	}
	if u := srv.usage(t, "t2"); u.StoredBytes != u.LogicalBytes || u.Objects != 1 {
		t.Errorf("t2 usage %+v; want stored == logical, one object", u)
	}
	if u := srv.usage(t, "t1"); u.Objects != 1 || u.LogicalBytes != int64(len(b1)) {
		t.Errorf("t1 usage %+v; want its one object only", u)
	}
	assertContent(t, srv.sdk(c1), "one", "x.log", b1)
	assertContent(t, srv.sdk(c2), "two", "x.log", b2)
	// t2 cannot read t1's object, transformed or not.
	_, err := srv.sdk(c2).GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("one"), Key: aws.String("x.log")})
	if err == nil {
		t.Errorf("t2 read t1's object")
	}
}

func TestPolicyCompressionDetectsDamage(t *testing.T) {
	srv := startServer(t, t.TempDir())
	c := srv.createTenant(t, "t1")
	cl := srv.sdk(c)
	mkBucket(t, cl, "logs")
	srv.policyAdd(t, "FOR TENANT t1 DO SET compression WITH engine=zstd, frame=256KiB")
	body := logText("damage", 2<<20) // eight frames
	stored, file := srv.putStored(t, cl, "t1", "logs", "hurt", body)
	if stored >= int64(len(body))/2 {
		t.Fatalf("object stores %d of %d bytes; want it compressed", stored, len(body))
	}
	srv.putStored(t, cl, "t1", "logs", "whole", body)
	flipByte(t, file, fileSize(t, file)/2)

	o := srv.rawGet(t, c, "logs", "hurt", "")
	if !o.failed() {
		t.Errorf("byte flipped in the middle of a compressed object: GET %v, right bytes %v; want a failure", o, bytes.Equal(o.body, body))
	}
	if o.status == http.StatusOK && !bytes.HasPrefix(body, o.body) {
		t.Errorf("the truncated body is not a prefix of the object")
	}
	// The first frame is intact, but its stored bytes share the first
	// 256 KiB integrity block with the damage, so a range in it fails too
	// (docs/integrity.md); whatever a range answers, it is never wrong
	// bytes.
	if fileSize(t, file)/2 >= 256<<10 {
		t.Fatalf("the damage (at %d) is past the first integrity block", fileSize(t, file)/2)
	}
	o = srv.rawGet(t, c, "logs", "hurt", "bytes=0-1000")
	if !o.failed() {
		t.Errorf("range in the damaged integrity block: %v", o)
	}
	for _, r := range [][2]int{{0, len(body) - 1}, {len(body) / 4, len(body) * 3 / 4}, {len(body) - 100, len(body) - 1}} {
		o := srv.rawGet(t, c, "logs", "hurt", fmt.Sprintf("bytes=%d-%d", r[0], r[1]))
		if !o.failed() && !bytes.Equal(o.body, body[r[0]:r[1]+1]) {
			t.Errorf("range %d-%d answered wrong bytes as a success: %v", r[0], r[1], o)
		}
	}
	assertContent(t, cl, "logs", "whole", body)
}

// A policy whose filter cannot be built is refused by `facet ctl policy
// add` with the position of the parameter at fault, and nothing is
// stored: before, it was listed as active and every PUT of the tenant
// answered 500.
func TestPolicyAddRefusesUnbuildableFilter(t *testing.T) {
	srv := startServer(t, t.TempDir())
	c := srv.createTenant(t, "t1")
	cl := srv.sdk(c)
	mkBucket(t, cl, "bkt")
	const text = "FOR TENANT t1 DO SET compression WITH engine=gzip, level=0"
	out, err := srv.ctl(t, "policy", "add", text)
	if err == nil {
		t.Fatalf("policy add exited 0:\n%s", out)
	}
	for _, want := range []string{fmt.Sprintf("1:%d: error: level 0: gzip takes 1-9", strings.Index(text, "level=")+1), "nothing was stored"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("policy add: want %q in\n%v\n%s", want, err, out)
		}
	}
	if p := srv.policyList(t); len(p) != 0 {
		t.Fatalf("policies stored: %+v", p)
	}
	body := logText("unbuildable", 64<<10)
	if stored, _ := srv.putStored(t, cl, "t1", "bkt", "k", body); stored != int64(len(body)) {
		t.Fatalf("PUT stored %d of %d bytes", stored, len(body))
	}
}
