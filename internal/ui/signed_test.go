package ui

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/authfail"
	"github.com/facet-sds/facet/internal/meta"
)

// memTrash is a recycle bin in memory, per tenant (the real one is tested
// in internal/filter/trash and end to end in test/e2e/py).
type memTrash struct {
	mu    sync.Mutex
	items map[string][]admin.TrashItem
}

func (m *memTrash) add(it admin.TrashItem) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.items[it.Tenant] = append(m.items[it.Tenant], it)
}

func (m *memTrash) List(_ context.Context, tenant string) ([]admin.TrashItem, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]admin.TrashItem(nil), m.items[tenant]...), nil
}

func (m *memTrash) Restore(_ context.Context, tenant, id string, _ bool) (admin.TrashItem, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, it := range m.items[tenant] {
		if it.ID == id {
			m.items[tenant] = append(m.items[tenant][:i:i], m.items[tenant][i+1:]...)
			return it, nil
		}
	}
	return admin.TrashItem{}, fmt.Errorf("%w: %s", admin.ErrTrashNotFound, id)
}

func (m *memTrash) Purge(ctx context.Context, tenant, id string) error {
	_, err := m.Restore(ctx, tenant, id, false)
	return err
}

// signedCall sends a request signed with k the way `facet ctl
// --access-key` and botocore sign it, and returns the status and body.
func (f *fixture) signedCall(k meta.NewKey, method, path string, edit func(*http.Request)) (int, string) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	sum := sha256.Sum256(nil)
	payload := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", payload)
	creds := aws.Credentials{AccessKeyID: k.AccessKey, SecretAccessKey: k.SecretKey}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, payload, SignedService, "us-east-1", time.Now()); err != nil {
		f.t.Fatal(err)
	}
	if edit != nil {
		edit(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func errCode(t *testing.T, body string) string {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("not a JSON error: %s", body)
	}
	return e.Code
}

// A tenant lists and restores its own recycle bin with its own keys,
// never another tenant's; the admin still sees every bin.
func TestSignedTenantUsesItsOwnRecycleBin(t *testing.T) {
	f := newFixture(t)
	now := time.Now().UTC()
	mine := admin.TrashItem{ID: "9-1-0000000a", Tenant: "acme", Bucket: "photos", Key: "cat.jpg", Size: 3, DeletedAt: now, ExpiresAt: now.Add(time.Hour)}
	theirs := admin.TrashItem{ID: "9-2-0000000b", Tenant: "zeta", Bucket: "zeta-private", Key: "secret.txt", Size: 5, DeletedAt: now, ExpiresAt: now.Add(time.Hour)}
	f.bin.add(mine)
	f.bin.add(theirs)

	st, body := f.signedCall(f.acme, http.MethodGet, "/v1/trash/acme", nil)
	var l admin.TrashList
	if err := json.Unmarshal([]byte(body), &l); st != http.StatusOK || err != nil || len(l.Items) != 1 || l.Items[0].ID != mine.ID {
		t.Fatalf("own list: %d %s", st, body)
	}
	if st, body := f.signedCall(f.acme, http.MethodGet, "/api/v1/trash/acme", nil); st != http.StatusOK || !strings.Contains(body, mine.ID) {
		t.Fatalf("own list under /api/v1: %d %s", st, body)
	}

	// Another tenant's bin: refused by name, and its ids are not found
	// under one's own name.
	st, body = f.signedCall(f.acme, http.MethodGet, "/v1/trash/zeta", nil)
	if st != http.StatusForbidden || !strings.Contains(body, "own recycle bin only") || strings.Contains(body, "secret.txt") {
		t.Fatalf("zeta's list: %d %s", st, body)
	}
	st, body = f.signedCall(f.acme, http.MethodPost, "/v1/trash/zeta/"+theirs.ID+"/restore", nil)
	if st != http.StatusForbidden {
		t.Fatalf("restore from zeta's bin: %d %s", st, body)
	}
	st, body = f.signedCall(f.acme, http.MethodPost, "/v1/trash/acme/"+theirs.ID+"/restore", nil)
	if st != http.StatusNotFound || errCode(t, body) != "NoSuchTrashItem" {
		t.Fatalf("zeta's item under acme's name: %d %s", st, body)
	}
	st, body = f.signedCall(f.acme, http.MethodDelete, "/v1/trash/acme/"+mine.ID, nil)
	if st != http.StatusForbidden || !strings.Contains(body, "administrator") {
		t.Fatalf("purge by a tenant: %d %s", st, body)
	}

	st, body = f.signedCall(f.acme, http.MethodPost, "/v1/trash/acme/"+mine.ID+"/restore?overwrite=false", nil)
	if st != http.StatusOK || !strings.Contains(body, "cat.jpg") {
		t.Fatalf("restore own: %d %s", st, body)
	}
	if l, _ := f.bin.List(t.Context(), "acme"); len(l) != 0 {
		t.Fatalf("restored item still in the bin: %+v", l)
	}
	if l, _ := f.bin.List(t.Context(), "zeta"); len(l) != 1 {
		t.Fatalf("zeta's bin changed: %+v", l)
	}

	// The admin, with the token, sees every tenant's bin.
	c := f.admin()
	if st, body := c.get("/ui/api/v1/trash/zeta"); st != http.StatusOK || !strings.Contains(body, "secret.txt") {
		t.Fatalf("admin's view of zeta's bin: %d %s", st, body)
	}
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/v1/trash/zeta", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("admin token: %d", resp.StatusCode)
	}
	// A dashboard session of the tenant has the same scope.
	tc := f.tenant(f.zeta)
	if st, body := tc.get("/ui/api/v1/trash/zeta"); st != http.StatusOK || !strings.Contains(body, "secret.txt") {
		t.Fatalf("zeta's session: %d %s", st, body)
	}
	if st, _ := tc.get("/ui/api/v1/trash/acme"); st != http.StatusForbidden {
		t.Fatalf("zeta's session reads acme's bin: %d", st)
	}
}

// Signed calls reach only what a tenant's dashboard session reaches, and
// bad signatures are refused with S3's codes, as JSON.
func TestSignedCallsAreScopedAndVerified(t *testing.T) {
	f := newFixture(t)
	st, body := f.signedCall(f.acme, http.MethodGet, "/v1/tenants", nil)
	if st != http.StatusOK || !strings.Contains(body, `"acme"`) || strings.Contains(body, "zeta") {
		t.Fatalf("tenant list: %d %s", st, body)
	}
	for _, p := range []string{"/v1/groups", "/v1/tenants/zeta", "/v1/filters", "/v1/trash/zeta"} {
		if st, body := f.signedCall(f.acme, http.MethodGet, p, nil); st != http.StatusForbidden || errCode(t, body) != "Forbidden" {
			t.Errorf("%s: %d %s", p, st, body)
		}
	}
	bad := f.acme
	bad.SecretKey = strings.Repeat("x", len(bad.SecretKey))
	if st, body := f.signedCall(bad, http.MethodGet, "/v1/trash/acme", nil); st != http.StatusForbidden || errCode(t, body) != "SignatureDoesNotMatch" {
		t.Errorf("wrong secret: %d %s", st, body)
	}
	// The path is signed: a request redirected at another tenant fails.
	if st, body := f.signedCall(f.acme, http.MethodGet, "/v1/trash/acme", func(r *http.Request) { r.URL.Path = "/v1/trash/zeta" }); st != http.StatusForbidden || errCode(t, body) != "SignatureDoesNotMatch" {
		t.Errorf("path changed after signing: %d %s", st, body)
	}
	unknown := meta.NewKey{KeyInfo: meta.KeyInfo{AccessKey: "FKNOSUCHKEY000000000"}, SecretKey: "s"}
	if st, body := f.signedCall(unknown, http.MethodGet, "/v1/trash/acme", nil); st != http.StatusForbidden || errCode(t, body) != "InvalidAccessKeyId" {
		t.Errorf("unknown key: %d %s", st, body)
	}
	// A revoked key stops working at once.
	if err := f.store.RevokeKey(t.Context(), "acme", f.acme.AccessKey); err != nil {
		t.Fatal(err)
	}
	if st, body := f.signedCall(f.acme, http.MethodGet, "/v1/trash/acme", nil); st != http.StatusForbidden || errCode(t, body) != "InvalidAccessKeyId" {
		t.Errorf("revoked key: %d %s", st, body)
	}
	if st, body := f.signedCall(f.zeta, http.MethodGet, "/v1/trash/zeta", nil); st != http.StatusOK {
		t.Errorf("zeta: %d %s", st, body)
	}
}

// Wrong signatures count per client address and access key: after ten,
// that key is refused with 429 SlowDown before its signature is checked,
// while another key from the same address still gets through.
func TestSignedCallFailuresRateLimited(t *testing.T) {
	f := newFixture(t)
	bad := f.acme
	bad.SecretKey = strings.Repeat("x", len(bad.SecretKey))
	for i := range authfail.DefaultFailures {
		if st, body := f.signedCall(bad, http.MethodGet, "/v1/trash/acme", nil); st != http.StatusForbidden || errCode(t, body) != "SignatureDoesNotMatch" {
			t.Fatalf("wrong secret %d: %d %s", i+1, st, body)
		}
	}
	for _, k := range []meta.NewKey{bad, f.acme} {
		if st, body := f.signedCall(k, http.MethodGet, "/v1/trash/acme", nil); st != http.StatusTooManyRequests || errCode(t, body) != "SlowDown" {
			t.Fatalf("key past its failures: %d %s; want 429 SlowDown", st, body)
		}
	}
	if st, body := f.signedCall(f.zeta, http.MethodGet, "/v1/trash/zeta", nil); st != http.StatusOK {
		t.Fatalf("another key from the same address: %d %s", st, body)
	}
}
