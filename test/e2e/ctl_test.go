package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func TestCtlTenantsAndKeys(t *testing.T) {
	srv := startServer(t, t.TempDir())
	alice := srv.createTenant(t, "alice")
	bob := srv.createTenant(t, "bob")
	ctx := ctxT(t)
	if alice.Tenant != "alice" {
		t.Errorf("tenant create printed tenant %q; want alice", alice.Tenant)
	}
	if _, err := srv.ctl(t, "tenant", "create", "alice", "-o", "json"); err == nil {
		t.Errorf("creating tenant alice twice succeeded")
	}

	out, err := srv.ctl(t, "tenant", "list", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var tl struct {
		Tenants []struct {
			Name string `json:"name"`
		} `json:"tenants"`
	}
	if err := json.Unmarshal(out, &tl); err != nil {
		t.Fatalf("tenant list -o json: %v\n%s", err, out)
	}
	var names []string
	for _, x := range tl.Tenants {
		names = append(names, x.Name)
	}
	if !sameSet(names, []string{"alice", "bob"}) {
		t.Errorf("tenant list = %q; want alice and bob", names)
	}

	// A second key works alongside the first.
	out, err = srv.ctl(t, "key", "create", "alice", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var k2 creds
	if err := json.Unmarshal(out, &k2); err != nil || k2.AccessKey == "" || k2.SecretKey == "" {
		t.Fatalf("key create -o json: %v\n%s", err, out)
	}
	if k2.Tenant != "alice" || k2.AccessKey == alice.AccessKey {
		t.Errorf("key create = %+v; want a new key of alice", k2)
	}
	mkBucket(t, srv.sdk(alice), "alice-bucket")
	list, err := srv.sdk(k2).ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil || len(list.Buckets) != 1 || aws.ToString(list.Buckets[0].Name) != "alice-bucket" {
		t.Errorf("ListBuckets with alice's second key: %v; want [alice-bucket]", err)
	}

	out, err = srv.ctl(t, "key", "list", "alice", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), alice.SecretKey) || strings.Contains(string(out), k2.SecretKey) {
		t.Errorf("key list shows a secret: %s", out)
	}
	var kl struct {
		Keys []struct {
			AccessKey string `json:"access_key"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(out, &kl); err != nil {
		t.Fatalf("key list -o json: %v\n%s", err, out)
	}
	var aks []string
	for _, k := range kl.Keys {
		aks = append(aks, k.AccessKey)
	}
	if !sameSet(aks, []string{alice.AccessKey, k2.AccessKey}) {
		t.Errorf("key list alice = %q; want her two keys", aks)
	}

	// Revoking a key stops it at once; the other key goes on working.
	if _, err := srv.ctl(t, "key", "revoke", "alice", k2.AccessKey, "-o", "json"); err != nil {
		t.Fatal(err)
	}
	_, err = srv.sdk(k2).ListBuckets(ctx, &s3.ListBucketsInput{})
	wantErr(t, "ListBuckets with a revoked key", err, "InvalidAccessKeyId", http.StatusForbidden)
	if _, err := srv.sdk(alice).ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil {
		t.Errorf("ListBuckets with alice's remaining key: %v", err)
	}
	// One tenant cannot revoke another's key.
	if _, err := srv.ctl(t, "key", "revoke", "bob", alice.AccessKey); err == nil {
		t.Errorf("revoking alice's key as tenant bob succeeded")
	}
	if _, err := srv.sdk(alice).ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil {
		t.Errorf("alice's key after a revoke under bob's name: %v", err)
	}

	// A tenant that owns buckets is not deleted; an empty one is, with its keys.
	if _, err := srv.ctl(t, "tenant", "delete", "alice"); err == nil {
		t.Errorf("deleting tenant alice while she owns a bucket succeeded")
	}
	if _, err := srv.ctl(t, "tenant", "delete", "bob", "-o", "json"); err != nil {
		t.Fatal(err)
	}
	_, err = srv.sdk(bob).ListBuckets(ctx, &s3.ListBucketsInput{})
	wantErr(t, "ListBuckets with a deleted tenant's key", err, "InvalidAccessKeyId", http.StatusForbidden)

	// The admin API wants its token.
	bad := *srv
	bad.token = "wrong-token"
	if _, err := bad.ctl(t, "tenant", "list"); err == nil {
		t.Errorf("ctl with a wrong admin token succeeded")
	}
	resp, err := http.Get("http://" + srv.adminAddr + "/api/v1/tenants")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("admin GET /api/v1/tenants without a token: %d; want 401", resp.StatusCode)
		}
	}

	// Secrets never reach the log.
	logb, err := os.ReadFile(srv.logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{alice.SecretKey, bob.SecretKey, k2.SecretKey, srv.token} {
		if strings.Contains(string(logb), secret) {
			t.Errorf("the server log contains a secret (%d chars)", len(secret))
		}
	}
}
