package block

import (
	"context"
	"crypto/tls"
	"encoding/hex"
	"errors"

	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/tlspsk"
)

// NBD over TLS authenticates tenants with TLS 1.3 pre-shared keys, as
// qemu (tls-creds-psk), libnbd (tls-psk-file) and nbdkit do with GnuTLS:
// the PSK identity is the tenant's name, its key 256 random bits that
// the admin API creates, shows once and keeps sealed under the master
// key. Client certificates signed by the server's CA (tls.go) remain
// accepted on the same port for clients that have no PSK support.

// PSKStore keeps tenants' NBD pre-shared keys (meta.Store).
type PSKStore interface {
	CreateNBDKey(ctx context.Context, tenant string) (meta.NBDKey, error)
	LookupNBDKey(ctx context.Context, tenant string) ([]byte, error)
	DeleteNBDKey(ctx context.Context, tenant string) error
}

// ClientPSK is a tenant's NBD pre-shared key as created: the one time the
// key is shown.
type ClientPSK struct {
	Tenant string `json:"tenant"`
	// Identity is the PSK identity (GnuTLS's "username").
	Identity string `json:"identity"`
	// Key is the key in hex, as GnuTLS's PSK files hold it.
	Key string `json:"key"`
	// PSKFile is the line of a GnuTLS PSK file ("identity:hexkey"):
	// qemu's DIR/keys.psk and libnbd's tls-psk-file.
	PSKFile string `json:"psk_file"`
}

// ErrNoPSKStore: the metadata store keeps no NBD keys.
var ErrNoPSKStore = errors.New("NBD pre-shared keys are not supported by this metadata store")

func (m *Manager) pskStore() (PSKStore, error) {
	ps, ok := m.cfg.Store.(PSKStore)
	if !ok {
		return nil, ErrNoPSKStore
	}
	return ps, nil
}

// CreateClientPSK creates (or replaces) a tenant's NBD pre-shared key.
func (m *Manager) CreateClientPSK(ctx context.Context, tenant string) (ClientPSK, error) {
	ps, err := m.pskStore()
	if err != nil {
		return ClientPSK{}, err
	}
	k, err := ps.CreateNBDKey(ctx, tenant)
	if err != nil {
		return ClientPSK{}, err
	}
	h := hex.EncodeToString(k.Key)
	return ClientPSK{Tenant: k.Tenant, Identity: k.Tenant, Key: h, PSKFile: k.Tenant + ":" + h + "\n"}, nil
}

// DeleteClientPSK revokes a tenant's NBD pre-shared key.
func (m *Manager) DeleteClientPSK(ctx context.Context, tenant string) error {
	ps, err := m.pskStore()
	if err != nil {
		return err
	}
	return ps.DeleteNBDKey(ctx, tenant)
}

// psk is the key lookup of the TLS-PSK handshake.
func (m *Manager) psk(ctx context.Context, identity string) ([]byte, error) {
	ps, err := m.pskStore()
	if err != nil {
		return nil, err
	}
	if !meta.ValidTenantName(identity) {
		return nil, tlspsk.ErrUnknownIdentity
	}
	key, err := ps.LookupNBDKey(ctx, identity)
	if errors.Is(err, meta.ErrNoNBDKey) {
		return nil, tlspsk.ErrUnknownIdentity
	}
	return key, err
}

// NBDTLS is the NBD server's STARTTLS: TLS 1.3 PSK with tenants' keys,
// and, when certs is set, client certificates for ClientHellos that
// offer no PSK.
func (m *Manager) NBDTLS(certs *tls.Config) *tlspsk.Server {
	return tlspsk.NewServer(tlspsk.Config{Key: m.psk, Fallback: certs})
}
