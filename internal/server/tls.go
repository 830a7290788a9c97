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

// loadTLS loads the certificates every HTTP listener (and the embedded
// bus's port) serves when TLS is configured, and registers their reload.
func (s *Server) loadTLS() error {
	if err := s.opts.TLS.Check(); err != nil || !s.opts.TLS.Enabled() {
		return err
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

// checkPlainListeners refuses, without TLS, a listener on a non-loopback
// address (the HTTP listeners and the embedded bus's --bus-listen) unless
// InsecureListen allows it.
func (s *Server) checkPlainListeners() error {
	if s.certs != nil || s.opts.InsecureListen {
		return nil
	}
	type named struct{ flag, addr string }
	var all []named
	for _, l := range s.listeners {
		all = append(all, named{listenerFlag[l.name], l.addr})
	}
	if s.opts.BusListen != "" {
		all = append(all, named{"--bus-listen", s.opts.BusListen})
	}
	for _, l := range all {
		if !Loopback(l.addr) {
			return fmt.Errorf("%s %s is not a loopback address: serve it over TLS with --tls-cert and --tls-key (or --tls-dir), or pass --insecure-listen to serve in clear there (tokens, keys and data then cross the network in clear)",
				l.flag, l.addr)
		}
	}
	return nil
}

// busTLS is the embedded bus's TLS configuration: the listeners'
// certificates, nil without TLS.
func (s *Server) busTLS() *tls.Config {
	if s.certs == nil {
		return nil
	}
	return s.certs.Config()
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

// Loopback reports whether addr (host:port) binds a loopback address
// only: a loopback IP or "localhost". An empty host binds every address.
func Loopback(addr string) bool {
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
