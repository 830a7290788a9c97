package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// auditLine is what the test reads of an audit record.
type auditLine struct {
	Kind      string `json:"kind"`
	RequestID string `json:"request_id"`
	Tenant    string `json:"tenant"`
	AccessKey string `json:"access_key"`
	Actor     string `json:"actor"`
	Source    string `json:"source"`
	Op        string `json:"op"`
	Bucket    string `json:"bucket"`
	Key       string `json:"key"`
	Result    string `json:"result"`
	Status    int    `json:"status"`
	Code      string `json:"code"`
	BytesIn   int64  `json:"bytes_in"`
	Time      string `json:"time"`
}

func parseAudit(t *testing.T, b []byte) []auditLine {
	t.Helper()
	var out []auditLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var l auditLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// TestAuditLog: a create-tenant/key, create-bucket, put, delete, denied
// (wrong secret, another tenant's bucket, a tampered presigned URL, a
// wrong admin token, a wrong dashboard sign-in) sequence yields the
// expected lines in order with their fields; no secret the test made or
// used (admin token, secret keys, signatures) is in the audit files or
// the server's log; `facet ctl audit tail` prints the last lines; a
// small --audit-log-max-size rotates, keeping --audit-log-keep files.
func TestAuditLog(t *testing.T) {
	if gatewayTarget() {
		t.Skip("the audit log is a flag of the server under test")
	}
	data, logDir := t.TempDir(), t.TempDir()
	path := filepath.Join(logDir, "audit.log")
	token := "e2e-admin-" + randHex(16)
	s := &server{t: t, dataDir: data, s3Addr: freeAddr(t), adminAddr: freeAddr(t), token: token, done: make(chan struct{})}
	if err := s.launch([]string{"serve", "--data", data, "--s3-addr", s.s3Addr, "--admin-addr", s.adminAddr, "--admin-token", token,
		"--nbd-addr", "off", "--audit-log", path, "--audit-log-max-size", "64KiB", "--audit-log-keep", "2"}, nil); err != nil {
		t.Fatal(err)
	}
	secrets := []string{token}
	acme := s.createTenant(t, "acme")
	bob := s.createTenant(t, "bob")
	secrets = append(secrets, acme.SecretKey, bob.SecretKey)
	var acme2 creds
	if err := json.Unmarshal(s.mustCtlOut(t, "key", "create", "acme", "-o", "json"), &acme2); err != nil || acme2.SecretKey == "" {
		t.Fatalf("key create: %v", err)
	}
	secrets = append(secrets, acme2.SecretKey)

	ctx := context.Background()
	cli := s.sdk(acme)
	mkBucket(t, cli, "audit-b")
	putBytes(t, cli, "audit-b", "k1", []byte("hello"))
	if _, err := cli.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("audit-b"), Key: aws.String("k1")}); err != nil {
		t.Fatal(err)
	}
	// A read is not recorded.
	if _, err := cli.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("audit-b")}); err != nil {
		t.Fatal(err)
	}
	wrongSecret := "wrong-" + randHex(16)
	secrets = append(secrets, wrongSecret)
	wrong := s.sdk(creds{AccessKey: acme.AccessKey, SecretKey: wrongSecret})
	expectS3Code(t, "wrong secret", func() error {
		_, err := wrong.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("audit-b"), Key: aws.String("k2"), Body: strings.NewReader("x")})
		return err
	}, "SignatureDoesNotMatch")
	expectS3Code(t, "other tenant's bucket", func() error {
		_, err := s.sdk(bob).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("audit-b"), Key: aws.String("k1")})
		return err
	}, "AccessDenied")

	// A presigned PUT works and is recorded without its signature; the
	// same URL with a tampered signature is refused and recorded with the
	// key id it claimed.
	ps, err := s3.NewPresignClient(cli).PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("audit-b"), Key: aws.String("pre")})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(ps.URL)
	sig := u.Query().Get("X-Amz-Signature")
	secrets = append(secrets, sig)
	hc := s.httpClient(30 * time.Second)
	put := func(raw string) int {
		req, _ := http.NewRequest(http.MethodPut, raw, strings.NewReader("presigned"))
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := put(ps.URL); st != 200 {
		t.Fatalf("presigned PUT: %d", st)
	}
	tampered := strings.Replace(ps.URL, sig, strings.Repeat("0", len(sig)), 1)
	if st := put(tampered); st != 403 {
		t.Fatalf("tampered presigned PUT: %d", st)
	}
	// A wrong admin token, and dashboard sign-ins: a wrong one, the
	// admin's, a tenant's.
	wrongToken := "wrong-token-" + randHex(16)
	secrets = append(secrets, wrongToken)
	req, _ := http.NewRequest(http.MethodPost, "http://"+s.adminAddr+"/v1/tenants", strings.NewReader(`{"name":"eve"}`))
	req.Header.Set("Authorization", "Bearer "+wrongToken)
	if resp, err := hc.Do(req); err != nil || resp.StatusCode != 401 {
		t.Fatalf("wrong admin token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	login := func(body string) int {
		resp, err := hc.Post("http://"+s.adminAddr+"/ui/api/login", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := login(`{"access_key":"` + acme.AccessKey + `","secret_key":"` + wrongSecret + `"}`); st != 401 {
		t.Fatalf("wrong sign-in: %d", st)
	}
	if st := login(`{"token":"` + token + `"}`); st != 200 {
		t.Fatalf("admin sign-in: %d", st)
	}
	if st := login(`{"access_key":"` + acme.AccessKey + `","secret_key":"` + acme.SecretKey + `"}`); st != 200 {
		t.Fatalf("tenant sign-in: %d", st)
	}
	// The tenant-signed control API: a key acme makes for itself, and a
	// call outside its scope.
	var acme3 creds
	if err := json.Unmarshal(s.mustCtlOut(t, "--access-key", acme.AccessKey, "--secret-key", acme.SecretKey, "key", "create", "acme", "-o", "json"), &acme3); err != nil || acme3.SecretKey == "" {
		t.Fatalf("tenant-signed key create: %v", err)
	}
	secrets = append(secrets, acme3.SecretKey)
	if _, err := s.ctl(t, "--access-key", acme.AccessKey, "--secret-key", acme.SecretKey, "tenant", "create", "eve"); err == nil {
		t.Fatal("a tenant created a tenant")
	}
	s.mustCtlOut(t, "policy", "add", "FOR BUCKET acme/audit-b DO SET noop")

	// ctl audit tail flushes the writer: the file then holds every line.
	tail := s.mustCtlOut(t, "audit", "tail", "-n", "3")
	if got := parseAudit(t, tail); len(got) != 3 || got[2].Op != "applyPolicies" {
		t.Fatalf("audit tail -n 3:\n%s", tail)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := parseAudit(t, raw)
	type want struct {
		kind, op, tenant, accessKey string
		status                      int
		code, bucket, key, result   string
	}
	wants := []want{
		{"admin", "createTenant", "acme", "", 201, "", "", "", "ok"},
		{"admin", "createTenant", "bob", "", 201, "", "", "", "ok"},
		{"admin", "createKey", "acme", "", 201, "", "", "", "ok"},
		{"s3", "CreateBucket", "acme", acme.AccessKey, 200, "", "audit-b", "", "ok"},
		{"s3", "PutObject", "acme", acme.AccessKey, 200, "", "audit-b", "k1", "ok"},
		{"s3", "DeleteObject", "acme", acme.AccessKey, 204, "", "audit-b", "k1", "ok"},
		{"s3", "PutObject", "", acme.AccessKey, 403, "SignatureDoesNotMatch", "audit-b", "k2", "denied"},
		{"s3", "GetObject", "bob", bob.AccessKey, 403, "AccessDenied", "audit-b", "k1", "denied"},
		{"s3", "PutObject", "acme", acme.AccessKey, 200, "", "audit-b", "pre", "ok"},
		{"s3", "PutObject", "", acme.AccessKey, 403, "SignatureDoesNotMatch", "audit-b", "pre", "denied"},
		{"admin", "-", "", "", 401, "", "", "", "denied"},
		{"signin", "DashboardSignIn", "", acme.AccessKey, 401, "InvalidCredentials", "", "", "denied"},
		{"signin", "DashboardSignIn", "", "", 200, "", "", "", "ok"},
		{"signin", "DashboardSignIn", "acme", acme.AccessKey, 200, "", "", "", "ok"},
		{"admin", "createKey", "acme", acme.AccessKey, 201, "", "", "", "ok"},
		{"admin", "-", "acme", acme.AccessKey, 403, "Forbidden", "", "", "denied"},
		{"admin", "applyPolicies", "", "", 201, "", "", "", "ok"},
	}
	got := make([]want, 0, len(lines))
	for _, l := range lines {
		got = append(got, want{l.Kind, l.Op, l.Tenant, l.AccessKey, l.Status, l.Code, l.Bucket, l.Key, l.Result})
		if l.Time == "" || l.Source == "" || (l.Kind != "signin" && l.RequestID == "") {
			t.Errorf("line without time, source or request id: %+v", l)
		}
		if l.Kind == "s3" && l.Op == "PutObject" && l.Key == "k1" && l.BytesIn != 5 {
			t.Errorf("PutObject k1 bytes_in %d, want 5", l.BytesIn)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(wants) {
		t.Fatalf("audit lines:\n got  %v\n want %v\nfile:\n%s", got, wants, raw)
	}

	// No secret in the audit log nor in the server's log.
	logB, err := os.ReadFile(s.logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, sec := range secrets {
		if sec == "" {
			t.Fatal("an empty secret")
		}
		if bytes.Contains(raw, []byte(sec)) || bytes.Contains(logB, []byte(sec)) {
			t.Errorf("secret %.6s… found in the audit file or the server's log", sec)
		}
	}

	// Rotation: 64 KiB files, 2 kept.
	for i := 0; i < 600; i++ {
		expectS3Code(t, "denied", func() error {
			_, err := s.sdk(bob).DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("audit-b"), Key: aws.String(fmt.Sprintf("r%03d", i))})
			return err
		}, "AccessDenied")
	}
	s.mustCtlOut(t, "audit", "tail", "-n", "1")
	ents, err := os.ReadDir(logDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
		b, _ := os.ReadFile(filepath.Join(logDir, e.Name()))
		if len(b) > 64<<10 {
			t.Errorf("%s: %d bytes, over --audit-log-max-size", e.Name(), len(b))
		}
		for _, sec := range secrets {
			if bytes.Contains(b, []byte(sec)) {
				t.Errorf("secret %.6s… found in %s", sec, e.Name())
			}
		}
	}
	if strings.Join(names, " ") != "audit.log audit.log.1 audit.log.2" {
		t.Fatalf("audit files after rotation: %v", names)
	}
	last := parseAudit(t, s.mustCtlOut(t, "audit", "tail", "-n", "1"))
	if len(last) != 1 || last[0].Key != "r599" || last[0].Tenant != "bob" {
		t.Fatalf("last line after rotation: %+v", last)
	}
}

func (s *server) mustCtlOut(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := s.ctl(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// expectS3Code fails the test unless f fails with the S3 error code.
func expectS3Code(t *testing.T, what string, f func() error, code string) {
	t.Helper()
	err := f()
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != code {
		t.Fatalf("%s: %v, want %s", what, err, code)
	}
}
