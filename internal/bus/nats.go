package bus

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/facet-sds/facet/internal/tlsconf"
)

// ServerOptions configure an embedded NATS server.
type ServerOptions struct {
	// Name identifies the server in logs and monitoring.
	Name string
	// Addr is where clients may connect ("127.0.0.1:4222"; port 0 picks
	// one). Empty opens no port: only in-process connections work.
	Addr   string
	Logger *slog.Logger
	// MaxPayload bounds one message; 0 keeps NATS's default (1 MiB).
	MaxPayload int32
	// TLS, when set, makes clients connect over TLS (tlsconf.Certs'
	// Config: certificates reloaded as they change).
	TLS *tls.Config
	// Token, or User and Password, are the credentials every client must
	// give (in its URL: nats://TOKEN@host or nats://USER:PASS@host);
	// empty: none.
	Token, User, Password string
}

// Server is a NATS server running in this process.
type Server struct {
	ns   *natsserver.Server
	log  *slog.Logger
	opts ServerOptions
}

// StartServer starts a NATS server and waits until it accepts
// connections.
func StartServer(opts ServerOptions) (*Server, error) {
	o := &natsserver.Options{
		ServerName: opts.Name,
		NoSigs:     true,
		MaxPayload: opts.MaxPayload,
		// The bus carries monitoring samples: nothing to persist.
		JetStream: false,
	}
	if (opts.User == "") != (opts.Password == "") || (opts.Token != "" && opts.User != "") {
		return nil, errors.New("bus credentials: a token, or a user with a password, not both")
	}
	o.Authorization, o.Username, o.Password = opts.Token, opts.User, opts.Password
	if opts.TLS != nil {
		o.TLSConfig, o.TLS, o.TLSVerify = opts.TLS, true, false
		o.TLSTimeout = 5
	}
	if opts.Addr == "" {
		o.DontListen = true
	} else {
		host, port, err := net.SplitHostPort(opts.Addr)
		if err != nil {
			return nil, fmt.Errorf("bus address %q: %w", opts.Addr, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 0 || p > 65535 {
			return nil, fmt.Errorf("bus address %q: bad port", opts.Addr)
		}
		if p == 0 {
			p = natsserver.RANDOM_PORT
		}
		o.Host, o.Port = host, p
	}
	ns, err := natsserver.NewServer(o)
	if err != nil {
		return nil, fmt.Errorf("nats server: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "bus")
	ns.SetLoggerV2(natsLog{log}, false, false, false)
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, errors.New("nats server did not start (is the port in use?)")
	}
	return &Server{ns: ns, log: log, opts: opts}, nil
}

// URL is the client URL ("nats://127.0.0.1:4222", tls:// when the
// server speaks TLS), without credentials, or "" when the server opens no
// port.
func (s *Server) URL() string {
	if s.ns.Addr() == nil {
		return ""
	}
	if s.opts.TLS != nil {
		return "tls://" + s.ns.Addr().String()
	}
	return "nats://" + s.ns.Addr().String()
}

// Connect returns an in-process connection: no socket involved.
func (s *Server) Connect(name string) (*NATS, error) {
	extra := []nats.Option{nats.InProcessServer(s.ns)}
	switch {
	case s.opts.Token != "":
		extra = append(extra, nats.Token(s.opts.Token))
	case s.opts.User != "":
		extra = append(extra, nats.UserInfo(s.opts.User, s.opts.Password))
	}
	return connect("", name, s.log, true, extra...)
}

// ServerStats is the traffic a server has seen since it started: messages
// and payload bytes received from publishers and delivered to subscribers.
type ServerStats struct {
	InMsgs, InBytes   int64
	OutMsgs, OutBytes int64
	Connections       int
}

// Stats reports the server's traffic counters.
func (s *Server) Stats() (ServerStats, error) {
	v, err := s.ns.Varz(nil)
	if err != nil {
		return ServerStats{}, err
	}
	return ServerStats{InMsgs: v.InMsgs, InBytes: v.InBytes, OutMsgs: v.OutMsgs, OutBytes: v.OutBytes, Connections: v.Connections}, nil
}

// Close shuts the server down and waits until it has.
func (s *Server) Close() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

// Dial connects to an external NATS server or cluster ("nats://h1:4222,
// nats://h2:4222"); credentials go in the URLs (nats://TOKEN@host,
// nats://USER:PASS@host), and tls:// URLs, or a caFile, make the
// connection TLS, verified against caFile's certificates or else the
// system's roots. It does not fail when the bus is unreachable: the
// connection keeps retrying in the background, forever, and buffers
// publishes meanwhile.
func Dial(url, name, caFile string, logger *slog.Logger) (*NATS, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	extra := []nats.Option{nats.RetryOnFailedConnect(true)}
	if caFile != "" || strings.Contains(url, "tls://") {
		cfg, err := tlsconf.ClientConfig(caFile)
		if err != nil {
			return nil, fmt.Errorf("bus: %w", err)
		}
		extra = append(extra, nats.Secure(cfg))
	}
	return connect(url, name, logger.With("component", "bus"), false, extra...)
}

// NATS is a Bus on one NATS connection.
type NATS struct {
	nc      *nats.Conn
	log     *slog.Logger
	pubErrs atomic.Uint64
	slow    atomic.Uint64
	// lastConnErr is the last failed connection attempt's error, logged
	// once.
	lastConnErr atomic.Pointer[string]
}

func subject(s *nats.Subscription) string {
	if s == nil {
		return ""
	}
	return s.Subject
}

var _ Bus = (*NATS)(nil)

// reconnectBuf bounds what publishes buffer while the bus is away: a few
// minutes of metric samples. Beyond it they fail (and are counted).
const reconnectBuf = 8 << 20

// connect connects to url, or in process (url is then meaningless: the
// client library reports its default, nats://127.0.0.1:4222, where no
// port is open).
func connect(url, name string, log *slog.Logger, inProcess bool, extra ...nats.Option) (*NATS, error) {
	b := &NATS{log: log}
	server := func(nc *nats.Conn) string {
		if inProcess {
			return "in-process"
		}
		return redact(nc.ConnectedUrl())
	}
	opts := append([]nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectJitter(250*time.Millisecond, time.Second),
		nats.ReconnectBufSize(reconnectBuf),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("bus disconnected; reconnecting", "err", err)
			}
		}),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
			// Once per distinct error, not per attempt: a refused
			// certificate or credential must be heard, the retries not.
			msg := err.Error()
			if prev := b.lastConnErr.Swap(&msg); prev == nil || *prev != msg {
				log.Warn("bus connect failed; retrying", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("bus reconnected", "server", server(nc))
		}),
		nats.ConnectHandler(func(nc *nats.Conn) {
			if inProcess {
				log.Info("bus in-process", "name", name)
				return
			}
			log.Info("bus connected", "server", server(nc))
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrSlowConsumer) {
				// Reported once per episode; the subscriber is behind.
				b.slow.Add(1)
				log.Warn("bus subscriber too slow: messages dropped", "subject", subject(sub))
				return
			}
			log.Warn("bus error", "err", err)
		}),
	}, extra...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to bus: %w", err)
	}
	b.nc = nc
	return b, nil
}

// Publish implements Bus.
func (b *NATS) Publish(subject string, data []byte) error {
	if err := CheckSubject(subject); err != nil {
		b.pubErrs.Add(1)
		return err
	}
	if err := b.nc.Publish(subject, data); err != nil {
		b.pubErrs.Add(1)
		return fmt.Errorf("bus publish %s: %w", subject, err)
	}
	return nil
}

// Subscribe implements Bus.
func (b *NATS) Subscribe(pattern string, fn func(subject string, data []byte)) (Subscription, error) {
	if err := CheckPattern(pattern); err != nil {
		return nil, err
	}
	sub, err := b.nc.Subscribe(pattern, func(m *nats.Msg) { fn(m.Subject, m.Data) })
	if err != nil {
		return nil, fmt.Errorf("bus subscribe %s: %w", pattern, err)
	}
	return sub, nil
}

// Flush waits until the server has processed everything published so far
// (or timeout passes). Tests use it to order a publish before a check.
func (b *NATS) Flush(timeout time.Duration) error {
	return b.nc.FlushTimeout(timeout)
}

// Connected reports whether the connection is up right now.
func (b *NATS) Connected() bool { return b.nc.IsConnected() }

// Stats reports the connection's counters.
func (b *NATS) Stats() Stats {
	s := b.nc.Stats()
	return Stats{
		OutMsgs: s.OutMsgs, OutBytes: s.OutBytes, InMsgs: s.InMsgs, InBytes: s.InBytes,
		PublishErrors: b.pubErrs.Load(), SlowConsumer: b.slow.Load(), Reconnects: s.Reconnects,
		Connected: b.nc.IsConnected(),
	}
}

// Close implements Bus.
func (b *NATS) Close() error {
	var err error
	if b.nc.IsConnected() {
		err = b.nc.FlushTimeout(time.Second)
	}
	b.nc.Close()
	if err != nil {
		return fmt.Errorf("bus flush on close: %w", err)
	}
	return nil
}

// natsLog sends the NATS server's logs to slog. Notices are debug: the
// server is chatty about its own start.
type natsLog struct{ l *slog.Logger }

func (n natsLog) Noticef(format string, v ...any) { n.l.Debug(fmt.Sprintf(format, v...)) }
func (n natsLog) Warnf(format string, v ...any)   { n.l.Warn(fmt.Sprintf(format, v...)) }
func (n natsLog) Fatalf(format string, v ...any)  { n.l.Error(fmt.Sprintf(format, v...)) }
func (n natsLog) Errorf(format string, v ...any)  { n.l.Error(fmt.Sprintf(format, v...)) }
func (n natsLog) Debugf(format string, v ...any)  { n.l.Debug(fmt.Sprintf(format, v...)) }
func (n natsLog) Tracef(format string, v ...any)  { n.l.Debug(fmt.Sprintf(format, v...)) }

// redact hides a URL's credentials, a token as well as a password (the
// client library's redaction keeps a token, in the user's place).
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	if u.User != nil {
		u.User = url.User("redacted")
	}
	return u.String()
}
