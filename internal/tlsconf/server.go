// Package tlsconf owns Facet's TLS configurations: on the server side,
// certificates loaded from files (one pair, or a directory of one pair per
// SNI name) and reloaded while the server runs when the files change or on
// demand; on the client side, verification against a CA file. Both keep
// Go's modern defaults with TLS 1.2 as the floor.
package tlsconf

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// MinVersion is the oldest TLS version Facet speaks, server and client.
const MinVersion = tls.VersionTLS12

// Source names where a server's certificates are: CertFile and KeyFile,
// or Dir holding NAME.crt and NAME.key pairs (see loadDir).
type Source struct {
	CertFile, KeyFile string
	Dir               string
}

// Enabled reports whether any certificate is configured.
func (s Source) Enabled() bool { return s.CertFile != "" || s.KeyFile != "" || s.Dir != "" }

// Check reports a source configured by halves or twice, naming the flags.
func (s Source) Check() error {
	switch {
	case s.Dir != "" && (s.CertFile != "" || s.KeyFile != ""):
		return errors.New("--tls-dir and --tls-cert/--tls-key are exclusive: give one pair of files or a directory")
	case (s.CertFile == "") != (s.KeyFile == ""):
		return errors.New("--tls-cert and --tls-key go together: give both files")
	}
	return nil
}

// DefaultName is the pair of a certificate directory served to clients
// that send no SNI name, or one no certificate covers: default.crt and
// default.key.
const DefaultName = "default"

// certSet is one loaded generation of certificates.
type certSet struct {
	// byName maps a DNS name (lower case, maybe "*.example.com") of a
	// certificate's SANs to the certificate.
	byName map[string]*tls.Certificate
	def    *tls.Certificate
}

// Certs is a server's certificates, swapped whole on reload: a handshake
// sees one generation, and a failed reload keeps the previous one.
type Certs struct {
	src   Source
	log   *slog.Logger
	set   atomic.Pointer[certSet]
	stamp atomic.Pointer[string] // the files' names, sizes and mtimes when loaded
	// reloads and failures count reload attempts that swapped and that
	// kept the old generation.
	reloads, failures atomic.Int64
}

// Load reads src's certificates; the server then offers them through
// Config. logger (nil: none) hears of reloads.
func Load(src Source, logger *slog.Logger) (*Certs, error) {
	if err := src.Check(); err != nil {
		return nil, err
	}
	if !src.Enabled() {
		return nil, errors.New("tls: no certificate configured")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Certs{src: src, log: logger}
	stamp, err := c.fingerprint()
	if err != nil {
		return nil, err
	}
	set, err := c.load()
	if err != nil {
		return nil, err
	}
	c.set.Store(set)
	c.stamp.Store(&stamp)
	return c, nil
}

// Config is the server configuration: TLS 1.2 at least, Go's default
// cipher suites and curves, the certificate chosen by SNI name from the
// current generation.
func (c *Certs) Config() *tls.Config {
	return &tls.Config{MinVersion: MinVersion, GetCertificate: c.certificate}
}

func (c *Certs) certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	set := c.set.Load()
	name := strings.ToLower(strings.TrimSuffix(hello.ServerName, "."))
	if name != "" {
		if crt := set.byName[name]; crt != nil {
			return crt, nil
		}
		if _, rest, ok := strings.Cut(name, "."); ok {
			if crt := set.byName["*."+rest]; crt != nil {
				return crt, nil
			}
		}
	}
	return set.def, nil
}

// Reload reads the files again now; on error the previous certificates
// stay in service.
func (c *Certs) Reload() error {
	stamp, err := c.fingerprint()
	if err == nil {
		var set *certSet
		if set, err = c.load(); err == nil {
			c.set.Store(set)
			c.stamp.Store(&stamp)
			c.reloads.Add(1)
			c.log.Info("tls certificates reloaded", "serial", c.Serial())
			return nil
		}
	}
	c.failures.Add(1)
	c.log.Warn("tls certificates not reloaded; the previous ones stay in service", "err", err)
	return err
}

// Serial is the default certificate's serial number, in hex (logs,
// tests).
func (c *Certs) Serial() string {
	set := c.set.Load()
	if set.def.Leaf == nil {
		return ""
	}
	return set.def.Leaf.SerialNumber.Text(16)
}

// Watch reloads the certificates whenever their files' sizes or mtimes
// change, checking every period, until ctx ends. A half-written pair
// (certificate and key not matching yet) fails to load and is retried at
// the next check.
func (c *Certs) Watch(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		stamp, err := c.fingerprint()
		if err != nil || stamp != *c.stamp.Load() {
			_ = c.Reload() // logged and counted
		}
	}
}

// fingerprint names, sizes and mtimes the files a load reads.
func (c *Certs) fingerprint() (string, error) {
	files := []string{c.src.CertFile, c.src.KeyFile}
	if c.src.Dir != "" {
		var err error
		if files, err = dirFiles(c.src.Dir); err != nil {
			return "", err
		}
	}
	var b strings.Builder
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			return "", fmt.Errorf("tls: %w", err)
		}
		fmt.Fprintf(&b, "%s %d %d\n", f, fi.Size(), fi.ModTime().UnixNano())
	}
	return b.String(), nil
}

// dirFiles lists a certificate directory's .crt and .key files, sorted.
func dirFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("tls: --tls-dir: %w", err)
	}
	var out []string
	for _, e := range ents {
		if n := e.Name(); !e.IsDir() && (strings.HasSuffix(n, ".crt") || strings.HasSuffix(n, ".key")) {
			out = append(out, filepath.Join(dir, n))
		}
	}
	slices.Sort(out)
	return out, nil
}

func (c *Certs) load() (*certSet, error) {
	if c.src.Dir == "" {
		crt, err := loadPair(c.src.CertFile, c.src.KeyFile)
		if err != nil {
			return nil, err
		}
		return &certSet{byName: names(nil, crt), def: crt}, nil
	}
	return loadDir(c.src.Dir)
}

// loadDir reads a certificate directory: every NAME.crt with its NAME.key
// (PEM). Each certificate serves the DNS names of its SANs, wildcards
// included, whatever NAME is; a name several certificates cover is
// served by default.crt, else by the first by file name. default.crt
// also serves clients without SNI or asking for a name no certificate
// covers (without it, the first pair by file name does). A .crt without
// its .key is an error.
func loadDir(dir string) (*certSet, error) {
	files, err := dirFiles(dir)
	if err != nil {
		return nil, err
	}
	// default.crt first: a name several certificates cover is its.
	def := filepath.Join(dir, DefaultName+".crt")
	if i := slices.Index(files, def); i > 0 {
		files = append([]string{def}, slices.Delete(files, i, i+1)...)
	}
	set := &certSet{byName: map[string]*tls.Certificate{}}
	for _, f := range files {
		base, ok := strings.CutSuffix(f, ".crt")
		if !ok {
			continue
		}
		crt, err := loadPair(f, base+".key")
		if err != nil {
			return nil, err
		}
		set.byName = names(set.byName, crt)
		if set.def == nil {
			set.def = crt
		}
	}
	if set.def == nil {
		return nil, fmt.Errorf("tls: --tls-dir %s holds no NAME.crt and NAME.key pair", dir)
	}
	return set, nil
}

func loadPair(certFile, keyFile string) (*tls.Certificate, error) {
	crt, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: %s and %s: %w", certFile, keyFile, err)
	}
	if crt.Leaf == nil {
		if crt.Leaf, err = x509.ParseCertificate(crt.Certificate[0]); err != nil {
			return nil, fmt.Errorf("tls: %s: %w", certFile, err)
		}
	}
	return &crt, nil
}

// names adds crt under every DNS name of its SANs (first come, first
// served).
func names(m map[string]*tls.Certificate, crt *tls.Certificate) map[string]*tls.Certificate {
	if m == nil {
		m = map[string]*tls.Certificate{}
	}
	for _, n := range crt.Leaf.DNSNames {
		n = strings.ToLower(n)
		if _, dup := m[n]; !dup {
			m[n] = crt
		}
	}
	return m
}
