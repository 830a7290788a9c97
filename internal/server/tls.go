package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"

	"github.com/facet-sds/facet/internal/tlsconf"
)

// listenerFlag names the flag of each HTTP listener's address, for errors.
var listenerFlag = map[string]string{"s3": "--s3-addr", "admin": "--admin-addr"}

// setupTLS loads the certificates every HTTP listener serves when TLS is
// configured, and registers their reload; without TLS, it refuses a
// listener on a non-loopback address unless InsecureListen allows it.
func (s *Server) setupTLS() error {
	if !s.opts.TLS.Enabled() {
		if err := s.opts.TLS.Check(); err != nil {
			return err
		}
		if s.opts.InsecureListen {
			return nil
		}
		for _, l := range s.listeners {
			if !loopback(l.addr) {
				return fmt.Errorf("%s %s is not a loopback address: serve it over TLS with --tls-cert and --tls-key (or --tls-dir), or pass --insecure-listen to serve plain HTTP there (tokens, keys and data then cross the network in clear)",
					listenerFlag[l.name], l.addr)
			}
		}
		return nil
	}
	certs, err := tlsconf.Load(s.opts.TLS, s.log)
	if err != nil {
		return err
	}
	s.certs = certs
	if every := s.opts.TLSReloadEvery; every > 0 {
		s.later("tls reload", func(ctx context.Context) { certs.Watch(ctx, every) })
	}
	return nil
}

// serveTLS makes l's server speak TLS with the reloadable certificates,
// HTTP/1.1 only (as over plain HTTP). A plain HTTP request to the port is
// answered 400 by net/http, never redirected.
func (s *Server) serveTLS(l *httpListener) {
	cfg := s.certs.Config()
	cfg.NextProtos = []string{"http/1.1"}
	l.srv.TLSConfig = cfg
	l.srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
}

// ReloadTLS reads the certificate files again now (SIGHUP); without TLS
// it does nothing. On error the previous certificates stay in service.
func (s *Server) ReloadTLS() error {
	if s.certs == nil {
		return nil
	}
	return s.certs.Reload()
}

// TLSSerial is the serial number (hex) of the default certificate in
// service, "" without TLS (tests).
func (s *Server) TLSSerial() string {
	if s.certs == nil {
		return ""
	}
	return s.certs.Serial()
}

// loopback reports whether addr (host:port) binds a loopback address
// only: a loopback IP or "localhost". An empty host binds every address.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
