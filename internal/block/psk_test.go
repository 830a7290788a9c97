package block

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/block/nbd"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/tlspsk"
)

// TestClientPSK: a tenant's key as the API shows it is what the TLS
// handshake looks up; other names are unknown identities, and the
// identity a handshake proves opens the tenant's volumes only.
func TestClientPSK(t *testing.T) {
	m, _ := testManager(t, Config{})
	ctx := t.Context()
	k, err := m.CreateClientPSK(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if k.Identity != "acme" || len(k.Key) != 64 || k.PSKFile != "acme:"+k.Key+"\n" {
		t.Fatalf("created %+v", k)
	}
	if _, err := m.CreateClientPSK(ctx, "nobody"); !errors.Is(err, meta.ErrTenantNotFound) {
		t.Fatalf("key for a missing tenant: %v", err)
	}
	got, err := m.psk(ctx, "acme")
	if want, _ := hex.DecodeString(k.Key); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("lookup: %x %v", got, err)
	}
	for _, id := range []string{"bob", "nobody", "Not A Tenant", strings.Repeat("a", 300), ""} {
		if _, err := m.psk(ctx, id); !errors.Is(err, tlspsk.ErrUnknownIdentity) {
			t.Errorf("identity %q: %v", id, err)
		}
	}
	if _, err := m.Lookup(ctx, "av", nbd.Peer{TLS: true, Identity: "acme"}); err != nil {
		t.Fatalf("owner: %v", err)
	}
	if _, err := m.Lookup(ctx, "av", nbd.Peer{TLS: true, Identity: "bob"}); !errors.Is(err, nbd.ErrUnknown) {
		t.Fatalf("another tenant: %v", err)
	}
	if err := m.DeleteClientPSK(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.psk(ctx, "acme"); !errors.Is(err, tlspsk.ErrUnknownIdentity) {
		t.Fatalf("revoked: %v", err)
	}
	if err := m.DeleteClientPSK(ctx, "acme"); !errors.Is(err, meta.ErrNoNBDKey) {
		t.Fatalf("revoked twice: %v", err)
	}
}
