// Package tlstest owns the throwaway certificate authority of Facet's TLS
// tests and benchmarks: a CA made on the spot, and server certificates it
// issues with a chosen serial number, written as PEM files in a temporary
// directory.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// TB is the part of testing.TB the helpers use (so that a benchmark
// command links no testing package).
type TB interface {
	Helper()
	Fatal(args ...any)
}

// CA is a test certificate authority.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// CertFile is the CA certificate, PEM, for clients' --ca options.
	CertFile string
	// Pool holds the CA certificate.
	Pool *x509.CertPool
}

// NewCA makes a CA and writes its certificate to dir/ca.crt.
func NewCA(t TB, dir string) *CA {
	t.Helper()
	ca, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// New is NewCA outside a test.
func New(dir string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "facet test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &CA{cert: cert, key: key, CertFile: filepath.Join(dir, "ca.crt"), Pool: x509.NewCertPool()}
	ca.Pool.AddCert(cert)
	return ca, writePEM(ca.CertFile, "CERTIFICATE", der)
}

// Pair is an issued certificate's files.
type Pair struct{ CertFile, KeyFile string }

// Issue makes a server (and client) certificate with serial for names
// (DNS names; "127.0.0.1" and "localhost" always included) and writes
// it as base.crt and base.key, replacing them atomically each (rename):
// a reloading server sees either file whole.
func (ca *CA) Issue(t TB, base string, serial int64, names ...string) Pair {
	t.Helper()
	p, err := ca.Make(base, serial, names...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Make is Issue outside a test.
func (ca *CA) Make(base string, serial int64, names ...string) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "facet test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     append([]string{"localhost"}, names...),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return Pair{}, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Pair{}, err
	}
	p := Pair{CertFile: base + ".crt", KeyFile: base + ".key"}
	if err := writePEM(p.CertFile, "CERTIFICATE", der); err != nil {
		return Pair{}, err
	}
	return p, writePEM(p.KeyFile, "PRIVATE KEY", kder)
}

// ClientConfig trusts the CA only.
func (ca *CA) ClientConfig() *tls.Config {
	return &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}
}

func writePEM(path, typ string, der []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
