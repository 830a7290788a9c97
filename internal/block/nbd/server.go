package nbd

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Errors an Exports implementation returns to choose the option reply.
var (
	// ErrUnknown: no such export (NBD_REP_ERR_UNKNOWN). A volume the
	// peer does not own is reported the same way, so that a tenant
	// cannot probe another's volume names.
	ErrUnknown = errors.New("nbd: unknown export")
	// ErrDenied: the export exists but policy refuses it here
	// (NBD_REP_ERR_POLICY).
	ErrDenied = errors.New("nbd: access denied")
	// ErrTLSRequired: the peer skipped TLS and this export is not served
	// in plain (NBD_REP_ERR_TLS_REQD, the protocol's "selective TLS").
	// An Exports answers it for unknown names too, so that a plain peer
	// cannot tell which names exist.
	ErrTLSRequired = errors.New("nbd: TLS required for this export")
)

// Errno is an error carrying an NBD error code, returned by a Device to
// choose the code of a failed request's reply (otherwise EIO).
type Errno struct {
	Code uint32
	Err  error
}

func (e *Errno) Error() string { return fmt.Sprintf("nbd errno %d: %v", e.Code, e.Err) }
func (e *Errno) Unwrap() error { return e.Err }

// Peer is who is on the other end of a connection.
type Peer struct {
	Addr     net.Addr
	Loopback bool
	// TLS is set once STARTTLS completed; Identity is then the
	// authenticated identity (the tenant whose PSK the client holds, or
	// the common name of its client certificate).
	TLS      bool
	Identity string
}

// addr is the peer's address as logs show it: "ip:port", not the
// net.Addr's struct.
func (p Peer) addr() string {
	if p.Addr == nil {
		return ""
	}
	return p.Addr.String()
}

// ExportInfo describes an export.
type ExportInfo struct {
	Name        string
	Description string
	Size        int64
	// MultiConn reports that a FLUSH on one connection makes the
	// completed writes of every connection durable (CAN_MULTI_CONN).
	MultiConn bool
}

// Device is an opened export. Offsets and lengths are within Size (the
// server checks); methods may be called concurrently.
type Device interface {
	ReadAt(ctx context.Context, p []byte, off int64) error
	WriteAt(ctx context.Context, p []byte, off int64, fua bool) error
	Flush(ctx context.Context) error
	Trim(ctx context.Context, off, n int64, fua bool) error
	// WriteZeroes makes the range read as zeros; with noHole
	// (NBD_CMD_FLAG_NO_HOLE) it must also stay allocated.
	WriteZeroes(ctx context.Context, off, n int64, fua, noHole bool) error
	Close() error
}

// Exports is the server's view of what it serves. It is consumed here and
// implemented by the block layer.
type Exports interface {
	// List returns the exports peer may see.
	List(ctx context.Context, peer Peer) ([]ExportInfo, error)
	// Lookup describes an export peer may open, or fails with
	// ErrUnknown or ErrDenied.
	Lookup(ctx context.Context, name string, peer Peer) (ExportInfo, error)
	// Open opens it.
	Open(ctx context.Context, name string, peer Peer) (Device, ExportInfo, error)
}

// TLS upgrades a connection once STARTTLS is acknowledged and names the
// authenticated peer (tlspsk.Server).
type TLS interface {
	Handshake(ctx context.Context, nc net.Conn) (net.Conn, string, error)
}

// Config assembles a Server.
type Config struct {
	Exports Exports
	// TLS enables STARTTLS; the identity it authenticates becomes
	// Peer.Identity.
	TLS TLS
	// PlainAllowed reports whether a peer may skip TLS; nil allows no
	// one (every option but STARTTLS and ABORT gets
	// NBD_REP_ERR_TLS_REQD). PlainLoopback allows loopback peers.
	PlainAllowed func(Peer) bool
	Logger       *slog.Logger
	// MaxInFlight bounds the requests one connection has in progress
	// (default 64).
	MaxInFlight int
	// HandshakeTimeout bounds the option phase (default 30 s).
	HandshakeTimeout time.Duration
	// LoopbackCongestion are the TCP congestion controls tried, in
	// order, on connections from loopback (nil: cubic, then reno, which
	// every kernel allows; "-" alone: the system's). See
	// setCongestion for why.
	LoopbackCongestion []string
}

// Server serves NBD connections.
type Server struct {
	cfg Config
	log *slog.Logger

	mu    sync.Mutex
	conns map[*conn]struct{}
	wg    sync.WaitGroup
	bufs  bufPools
}

// New returns a server.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 64
	}
	if cfg.LoopbackCongestion == nil {
		cfg.LoopbackCongestion = []string{"cubic", "reno"}
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 30 * time.Second
	}
	if cfg.PlainAllowed == nil {
		cfg.PlainAllowed = func(Peer) bool { return false }
	}
	return &Server{cfg: cfg, log: cfg.Logger, conns: map[*conn]struct{}{}}
}

// Serve accepts connections on ln until ctx ends, then stops reading new
// requests, lets those in flight finish and closes every connection.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				s.shutdown()
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			s.shutdown()
			return fmt.Errorf("nbd: accept: %w", err)
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.ServeConn(ctx, c)
		}()
	}
}

func (s *Server) shutdown() {
	s.mu.Lock()
	for c := range s.conns {
		// Unblock the reader; requests in flight still get replies.
		c.nc.SetReadDeadline(time.Now())
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// ServeConn runs one connection to its end and closes it.
func (s *Server) ServeConn(ctx context.Context, nc net.Conn) {
	c := &conn{s: s, nc: nc, rw: nc, peer: peerOf(nc)}
	if c.peer.Loopback {
		s.setCongestion(nc)
	}
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.rw.Close()
	}()
	if ctx.Err() != nil {
		return
	}
	nc.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	dev, info, err := c.handshake(ctx)
	if err != nil {
		if !errors.Is(err, errDone) {
			s.log.Debug("nbd handshake ended", "peer", c.peer.addr(), "err", err)
		}
		return
	}
	nc.SetDeadline(time.Time{})
	s.log.Info("nbd export opened", "export", info.Name, "peer", c.peer.addr(), "tls", c.peer.TLS, "identity", c.peer.Identity)
	err = c.transmit(ctx, dev, info)
	if cerr := dev.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, errDone) {
		s.log.Info("nbd connection ended", "export", info.Name, "peer", c.peer.addr(), "err", err)
	}
}

// PlainLoopback lets loopback peers skip TLS (Config.PlainAllowed). A
// local port forwarder makes any client look local, so Facet uses it only
// when the operator asks (--nbd-allow-plain-loopback).
func PlainLoopback(p Peer) bool { return p.Loopback }

func peerOf(nc net.Conn) Peer {
	p := Peer{Addr: nc.RemoteAddr()}
	switch a := nc.RemoteAddr().(type) {
	case *net.TCPAddr:
		p.Loopback = a.IP.IsLoopback()
	case *net.UnixAddr:
		p.Loopback = true
	default:
		// net.Pipe in tests, and anything else local.
		p.Loopback = a == nil || a.Network() == "pipe"
	}
	return p
}

// errDone ends a connection without it being an error (ABORT, DISC).
var errDone = errors.New("nbd: done")

// conn is one client connection.
type conn struct {
	s    *Server
	nc   net.Conn
	rw   net.Conn // nc, or the TLS connection over it
	peer Peer
}

func (c *conn) handshake(ctx context.Context) (Device, ExportInfo, error) {
	var hello [18]byte
	binary.BigEndian.PutUint64(hello[0:], nbdMagic)
	binary.BigEndian.PutUint64(hello[8:], ihaveOpt)
	binary.BigEndian.PutUint16(hello[16:], flagFixedNewstyle|flagNoZeroes)
	if _, err := c.rw.Write(hello[:]); err != nil {
		return nil, ExportInfo{}, err
	}
	var cf [4]byte
	if _, err := io.ReadFull(c.rw, cf[:]); err != nil {
		return nil, ExportInfo{}, err
	}
	clientFlags := binary.BigEndian.Uint32(cf[:])
	if clientFlags&^uint32(flagFixedNewstyle|flagNoZeroes) != 0 || clientFlags&flagFixedNewstyle == 0 {
		return nil, ExportInfo{}, fmt.Errorf("client flags %#x not supported", clientFlags)
	}
	noZeroes := clientFlags&flagNoZeroes != 0
	for {
		opt, data, err := c.readOption()
		if err != nil {
			return nil, ExportInfo{}, err
		}
		if opt.tooBig {
			if opt.code == optExportName {
				return nil, ExportInfo{}, errors.New("export name too long")
			}
			if err := c.reply(opt.code, repErrTooBig, []byte("option data too long")); err != nil {
				return nil, ExportInfo{}, err
			}
			continue
		}
		if !c.peer.TLS && !c.s.cfg.PlainAllowed(c.peer) && opt.code != optStartTLS && opt.code != optAbort {
			if opt.code == optExportName {
				return nil, ExportInfo{}, errors.New("EXPORT_NAME without TLS from a peer that needs it")
			}
			if err := c.reply(opt.code, repErrTLSReqd, []byte("TLS is required: use STARTTLS")); err != nil {
				return nil, ExportInfo{}, err
			}
			continue
		}
		switch opt.code {
		case optExportName:
			dev, info, err := c.s.cfg.Exports.Open(ctx, string(data), c.peer)
			if err != nil {
				return nil, ExportInfo{}, fmt.Errorf("EXPORT_NAME %q: %w", data, err)
			}
			b := make([]byte, 10, 10+124)
			binary.BigEndian.PutUint64(b, uint64(info.Size))
			binary.BigEndian.PutUint16(b[8:], transmissionFlags(info))
			if !noZeroes {
				b = b[:10+124]
			}
			if _, err := c.rw.Write(b); err != nil {
				dev.Close()
				return nil, ExportInfo{}, err
			}
			return dev, info, nil
		case optAbort:
			c.reply(opt.code, repAck, nil)
			return nil, ExportInfo{}, errDone
		case optList:
			if len(data) != 0 {
				if err := c.reply(opt.code, repErrInvalid, []byte("LIST takes no data")); err != nil {
					return nil, ExportInfo{}, err
				}
				continue
			}
			list, err := c.s.cfg.Exports.List(ctx, c.peer)
			if err != nil {
				if err := c.reply(opt.code, repErrShutdown, []byte("cannot list exports")); err != nil {
					return nil, ExportInfo{}, err
				}
				continue
			}
			for _, e := range list {
				b := binary.BigEndian.AppendUint32(nil, uint32(len(e.Name)))
				b = append(b, e.Name...)
				if err := c.reply(opt.code, repServer, b); err != nil {
					return nil, ExportInfo{}, err
				}
			}
			if err := c.reply(opt.code, repAck, nil); err != nil {
				return nil, ExportInfo{}, err
			}
		case optStartTLS:
			switch {
			case c.s.cfg.TLS == nil:
				err = c.reply(opt.code, repErrUnsup, []byte("TLS is not configured"))
			case c.peer.TLS:
				err = c.reply(opt.code, repErrInvalid, []byte("TLS already negotiated"))
			case len(data) != 0:
				err = c.reply(opt.code, repErrInvalid, []byte("STARTTLS takes no data"))
			default:
				if err := c.reply(opt.code, repAck, nil); err != nil {
					return nil, ExportInfo{}, err
				}
				if err := c.startTLS(ctx); err != nil {
					return nil, ExportInfo{}, err
				}
			}
			if err != nil {
				return nil, ExportInfo{}, err
			}
		case optInfo, optGo:
			dev, info, err := c.infoOrGo(ctx, opt.code, data)
			if err != nil || dev != nil {
				return dev, info, err
			}
		default:
			if err := c.reply(opt.code, repErrUnsup, []byte("option not supported")); err != nil {
				return nil, ExportInfo{}, err
			}
		}
	}
}

func (c *conn) startTLS(ctx context.Context) error {
	tc, id, err := c.s.cfg.TLS.Handshake(ctx, c.nc)
	if err != nil {
		// Refused credentials are worth an operator's eye; the error
		// names the identity, never a key.
		c.s.log.Warn("nbd STARTTLS failed", "peer", c.peer.addr(), "err", err)
		return fmt.Errorf("TLS handshake: %w", err)
	}
	c.rw = tc
	c.peer.TLS = true
	c.peer.Identity = id
	if st, ok := tc.(fmt.Stringer); ok {
		c.s.log.Debug("nbd STARTTLS done", "peer", c.peer.addr(), "session", st.String())
	}
	return nil
}

// infoOrGo answers INFO and GO. It returns a device only for a GO that
// succeeded; a nil device and nil error mean "go on with options".
func (c *conn) infoOrGo(ctx context.Context, code uint32, data []byte) (Device, ExportInfo, error) {
	name, reqs, ok := parseInfoRequest(data)
	if !ok {
		return nil, ExportInfo{}, c.reply(code, repErrInvalid, []byte("malformed INFO/GO request"))
	}
	var (
		dev  Device
		info ExportInfo
		err  error
	)
	if code == optGo {
		dev, info, err = c.s.cfg.Exports.Open(ctx, name, c.peer)
	} else {
		info, err = c.s.cfg.Exports.Lookup(ctx, name, c.peer)
	}
	if err != nil {
		rep, msg := uint32(repErrUnknown), "unknown export"
		if errors.Is(err, ErrDenied) {
			rep, msg = repErrPolicy, "export not available to this peer"
		} else if errors.Is(err, ErrTLSRequired) {
			rep, msg = repErrTLSReqd, "TLS is required for this export: use STARTTLS"
		} else if !errors.Is(err, ErrUnknown) {
			// "The requested export is not available" (UNKNOWN) rather
			// than SHUTDOWN, which clients report as the server going
			// away; the message says it exists.
			msg = "export cannot be opened now (the server's log says why)"
			c.s.log.Warn("nbd open failed", "export", name, "err", err)
		}
		return nil, ExportInfo{}, c.reply(code, uint32(rep), []byte(msg))
	}
	fail := func(err error) (Device, ExportInfo, error) {
		if dev != nil {
			dev.Close()
		}
		return nil, ExportInfo{}, err
	}
	b := make([]byte, 12)
	binary.BigEndian.PutUint16(b, infoExport)
	binary.BigEndian.PutUint64(b[2:], uint64(info.Size))
	binary.BigEndian.PutUint16(b[10:], transmissionFlags(info))
	if err := c.reply(code, repInfo, b); err != nil {
		return fail(err)
	}
	bs := make([]byte, 14)
	binary.BigEndian.PutUint16(bs, infoBlockSize)
	binary.BigEndian.PutUint32(bs[2:], 1)
	binary.BigEndian.PutUint32(bs[6:], PreferredBlock)
	binary.BigEndian.PutUint32(bs[10:], MaxPayload)
	if err := c.reply(code, repInfo, bs); err != nil {
		return fail(err)
	}
	for _, r := range reqs {
		var b []byte
		switch r {
		case infoName:
			b = binary.BigEndian.AppendUint16(nil, infoName)
			b = append(b, info.Name...)
		case infoDescription:
			if info.Description == "" {
				continue
			}
			b = binary.BigEndian.AppendUint16(nil, infoDescription)
			b = append(b, info.Description...)
		default:
			continue
		}
		if err := c.reply(code, repInfo, b); err != nil {
			return fail(err)
		}
	}
	if err := c.reply(code, repAck, nil); err != nil {
		return fail(err)
	}
	return dev, info, nil
}

// parseInfoRequest parses the data of INFO and GO: u32 name length, name,
// u16 count, count × u16 information types.
func parseInfoRequest(d []byte) (name string, reqs []uint16, ok bool) {
	if len(d) < 6 {
		return "", nil, false
	}
	n := binary.BigEndian.Uint32(d)
	if uint64(n) > uint64(len(d)-6) {
		return "", nil, false
	}
	name = string(d[4 : 4+n])
	rest := d[4+n:]
	cnt := int(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	if len(rest) != 2*cnt {
		return "", nil, false
	}
	for i := 0; i < cnt; i++ {
		reqs = append(reqs, binary.BigEndian.Uint16(rest[2*i:]))
	}
	return name, reqs, true
}

func transmissionFlags(info ExportInfo) uint16 {
	f := uint16(tfHasFlags | tfSendFlush | tfSendFUA | tfSendTrim | tfSendWriteZeroes)
	if info.MultiConn {
		f |= tfCanMultiConn
	}
	return f
}

type option struct {
	code   uint32
	tooBig bool
}

func (c *conn) readOption() (option, []byte, error) {
	var h [16]byte
	if _, err := io.ReadFull(c.rw, h[:]); err != nil {
		return option{}, nil, err
	}
	if binary.BigEndian.Uint64(h[:]) != ihaveOpt {
		return option{}, nil, errors.New("bad option magic")
	}
	o := option{code: binary.BigEndian.Uint32(h[8:])}
	n := binary.BigEndian.Uint32(h[12:])
	if n > maxOptionData {
		if n > maxDiscard {
			return option{}, nil, fmt.Errorf("option %d data of %d bytes", o.code, n)
		}
		if _, err := io.CopyN(io.Discard, c.rw, int64(n)); err != nil {
			return option{}, nil, err
		}
		o.tooBig = true
		return o, nil, nil
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(c.rw, data); err != nil {
		return option{}, nil, err
	}
	return o, data, nil
}

func (c *conn) reply(opt, typ uint32, data []byte) error {
	b := make([]byte, 20, 20+len(data))
	binary.BigEndian.PutUint64(b, optReplyMagic)
	binary.BigEndian.PutUint32(b[8:], opt)
	binary.BigEndian.PutUint32(b[12:], typ)
	binary.BigEndian.PutUint32(b[16:], uint32(len(data)))
	b = append(b, data...)
	_, err := c.rw.Write(b)
	return err
}
