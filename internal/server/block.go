package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/block"
	"github.com/facet-sds/facet/internal/block/nbd"
	"github.com/facet-sds/facet/internal/bus"
	"github.com/facet-sds/facet/internal/control"
	"github.com/facet-sds/facet/internal/filter/builtin"
	"github.com/facet-sds/facet/internal/keys"
	"github.com/facet-sds/facet/internal/meta"
)

// BlockOptions configures the block stage (NBD volumes).
type BlockOptions struct {
	// Addr is the NBD listen address; "" or "off" runs no block stage.
	Addr string
	// TLSDir holds the CA and server certificate of NBD's certificate
	// mode (see block.LoadTLS); empty creates and uses DATA/nbd-tls.
	// Pre-shared keys, the default, live in the metadata store.
	TLSDir string
	// Ready, when set, is called with the NBD address once it listens.
	Ready func(addr string)
	// AllowPlainLoopback lets NBD clients on loopback skip TLS, for the
	// volumes of tenants that allow it (meta.Tenant.AllowPlainNBD).
	// Off, the default: every client authenticates as a tenant (TLS-PSK
	// or a client certificate), since a local port forwarder makes any
	// remote client look local.
	AllowPlainLoopback bool
	// Optional lets the server run without the block stage when Addr
	// cannot be bound (the default address, taken by another server on
	// the machine); an address asked for explicitly must be bound.
	Optional bool
}

// blockStage is a block stage: its manager and NBD server run from
// Start; Shutdown stops the NBD server (requests in flight finish first)
// before it cancels the other goroutines.
type blockStage struct {
	mgr  *block.Manager
	done chan struct{} // closed when the NBD server stopped; err is then set
	err  error
}

// newBlock builds the volume manager and the NBD server, and binds the NBD
// listener (whether the stage runs at all depends on it, see
// BlockOptions.Optional). It returns a nil stage when the block stage is
// off.
func (s *Server) newBlock(ctx context.Context, store *meta.Store, policies block.Policies, dataKeys block.Keys,
	reg prometheus.Registerer, pub bus.Bus) (*blockStage, error) {
	opts := s.opts
	bo := opts.Block
	if bo.Addr == "" || bo.Addr == "off" {
		return nil, nil
	}
	log := s.log.With("stage", "block")
	tlsDir := bo.TLSDir
	if tlsDir == "" && !opts.stateless() {
		tlsDir = opts.DataDir + "/nbd-tls"
	}
	var tlsCfg *tls.Config
	if tlsDir != "" {
		var err error
		if tlsCfg, err = block.LoadTLS(tlsDir, hostOf(bo.Addr)); err != nil {
			return nil, fmt.Errorf("block: %w", err)
		}
	}
	ln, err := net.Listen("tcp", bo.Addr)
	if err != nil {
		if bo.Optional {
			log.Error("NBD listener not started: block volumes are not served by this process", "addr", bo.Addr, "err", err)
			return nil, nil
		}
		return nil, fmt.Errorf("listen nbd: %w", err)
	}
	cfg := block.Config{Store: store, Policies: policies, Keys: dataKeys, Logger: log, TLSDir: tlsDir, Node: opts.Node}
	if pub != nil {
		cfg.Publish = pub.Publish
	}
	if !opts.stateless() && opts.DataDir != "" {
		cfg.DefaultPoolDir = opts.DataDir + "/pool" // volumes out of the box, until pools are configured
	}
	mgr := block.New(cfg)
	if err := mgr.Reload(ctx); err != nil {
		ln.Close()
		return nil, fmt.Errorf("block: %w", err)
	}
	if reg != nil {
		if err := reg.Register(mgr.Collector()); err != nil {
			ln.Close()
			return nil, fmt.Errorf("block metrics: %w", err)
		}
	}
	plain := func(nbd.Peer) bool { return false }
	if bo.AllowPlainLoopback {
		plain = nbd.PlainLoopback
	}
	// STARTTLS: tenants' pre-shared keys (TLS 1.3 PSK), and the CA's
	// client certificates for clients that offer no PSK.
	srv := nbd.New(nbd.Config{Exports: mgr, TLS: mgr.NBDTLS(tlsCfg), Logger: log, PlainAllowed: plain})
	// The NBD server has a lifetime of its own, inside the server's: it
	// stops first, with the HTTP listeners.
	nctx, stopNBD := context.WithCancel(s.ctx)
	st := &blockStage{mgr: mgr, done: make(chan struct{})}
	s.later("block manager", mgr.Run)
	s.later("nbd listener", func(context.Context) {
		st.err = srv.Serve(nctx, ln)
		close(st.done)
		if st.err != nil {
			s.fail(st.err)
		}
	})
	s.stops = append(s.stops, func() error {
		stopNBD()
		if !s.started.Load() { // Start never ran
			return ln.Close()
		}
		<-st.done
		return nil
	})
	s.readyHooks = append(s.readyHooks, func() {
		log.Info("nbd listening", "addr", ln.Addr().String(), "tls", "psk", "client_certificates", tlsCfg != nil,
			"plain_loopback", bo.AllowPlainLoopback)
		if bo.Ready != nil {
			bo.Ready(ln.Addr().String())
		}
	})
	return st, nil
}

// volumes is the admin API's view; nil when the stage is off.
func (b *blockStage) volumes() admin.Volumes {
	if b == nil {
		return nil
	}
	return b.mgr
}

func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil || h == "" {
		return "127.0.0.1"
	}
	return h
}

// buildBlock builds the block stage alone (`facet block`): the metadata
// store, the policy table (volume filters and throttles), the NBD server
// and an admin API for pools and volumes, without the S3 gateway.
func (s *Server) buildBlock(ctx context.Context) error {
	opts, logger := s.opts, s.log
	token, generated, masterKey, err := localState(opts)
	if err != nil {
		return err
	}
	s.token = token
	if generated {
		s.tokenFile = opts.DataDir + "/admin.token"
	}
	store, err := s.openStore(ctx, masterKey)
	if err != nil {
		return err
	}
	policies := control.New(control.Config{Store: store, Registry: builtin.NewRegistry(), Logger: logger})
	dataKeys, err := keys.New(masterKey, policies, 0)
	if err != nil {
		return fmt.Errorf("data keys: %w", err)
	}
	if err := policies.Reload(ctx); err != nil {
		return fmt.Errorf("load policies: %w", err)
	}
	s.later("policy reload", policies.Run)
	reg := prometheus.NewRegistry()
	blk, err := s.newBlock(ctx, store, policies, dataKeys, reg, nil)
	if err != nil {
		return err
	}
	if blk == nil {
		return errors.New("facet block: --nbd-addr is off")
	}
	auditLog, err := s.openAudit(reg)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	h := admin.New(admin.Config{Store: store, Token: token, Logger: logger, Policies: policies, Volumes: blk.volumes(),
		Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), Audit: adminAudit(auditLog)})
	s.listen("admin", opts.AdminAddr, &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second})
	s.ready = opts.Ready
	s.readyMsg = []any{"facet block ready", "data", opts.DataDir}
	return nil
}
