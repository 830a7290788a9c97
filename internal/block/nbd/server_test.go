package nbd

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// memDevice is an in-memory export; reads at offset slowOff wait until
// released, so that tests can force out-of-order replies.
type memDevice struct {
	mu      sync.Mutex
	data    []byte
	flushes int
	noHoles int
	slow    chan struct{}
	slowOff int64
}

func (d *memDevice) ReadAt(_ context.Context, p []byte, off int64) error {
	if d.slow != nil && off == d.slowOff {
		<-d.slow
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	copy(p, d.data[off:])
	return nil
}

func (d *memDevice) WriteAt(_ context.Context, p []byte, off int64, fua bool) error {
	switch off {
	case 13:
		return &Errno{Code: EPERM, Err: errors.New("read-only here")}
	case 17:
		return fmt.Errorf("pwrite: %w", syscall.ENOSPC) // a full pool
	case 19:
		return errors.New("disk on fire")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	copy(d.data[off:], p)
	if fua {
		d.flushes++
	}
	return nil
}

func (d *memDevice) Flush(context.Context) error {
	d.mu.Lock()
	d.flushes++
	d.mu.Unlock()
	return nil
}

func (d *memDevice) Trim(_ context.Context, off, n int64, _ bool) error {
	return d.WriteZeroes(context.Background(), off, n, false, false)
}

func (d *memDevice) WriteZeroes(_ context.Context, off, n int64, _, noHole bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if noHole {
		d.noHoles++
	}
	clear(d.data[off : off+n])
	return nil
}

func (d *memDevice) Close() error { return nil }

type memExports struct {
	dev   *memDevice
	owner string
}

func (e *memExports) info() ExportInfo {
	return ExportInfo{Name: "disk", Size: int64(len(e.dev.data)), MultiConn: true}
}

func (e *memExports) allowed(p Peer) bool { return !p.TLS || p.Identity == e.owner }

func (e *memExports) List(_ context.Context, p Peer) ([]ExportInfo, error) {
	if !e.allowed(p) {
		return nil, nil
	}
	return []ExportInfo{e.info()}, nil
}

func (e *memExports) Lookup(_ context.Context, name string, p Peer) (ExportInfo, error) {
	if name != "disk" || !e.allowed(p) {
		return ExportInfo{}, ErrUnknown
	}
	return e.info(), nil
}

func (e *memExports) Open(ctx context.Context, name string, p Peer) (Device, ExportInfo, error) {
	if name == "broken" {
		return nil, ExportInfo{}, errors.New("backing file: permission denied")
	}
	info, err := e.Lookup(ctx, name, p)
	if err != nil {
		return nil, ExportInfo{}, err
	}
	return e.dev, info, nil
}

// client is a minimal NBD client for tests.
type client struct {
	t *testing.T
	c net.Conn
}

func (c *client) read(n int) []byte {
	c.t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(c.c, b); err != nil {
		c.t.Fatalf("read %d: %v", n, err)
	}
	return b
}

func (c *client) write(parts ...[]byte) {
	c.t.Helper()
	for _, p := range parts {
		if _, err := c.c.Write(p); err != nil {
			c.t.Fatal(err)
		}
	}
}

func (c *client) hello(flags uint32) {
	h := c.read(18)
	if binary.BigEndian.Uint64(h) != nbdMagic || binary.BigEndian.Uint64(h[8:]) != ihaveOpt ||
		binary.BigEndian.Uint16(h[16:]) != flagFixedNewstyle|flagNoZeroes {
		c.t.Fatalf("server hello %x", h)
	}
	c.write(binary.BigEndian.AppendUint32(nil, flags))
}

func (c *client) option(opt uint32, data []byte) {
	b := binary.BigEndian.AppendUint64(nil, ihaveOpt)
	b = binary.BigEndian.AppendUint32(b, opt)
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	c.write(append(b, data...))
}

// reply reads one option reply: its type and data.
func (c *client) reply(opt uint32) (uint32, []byte) {
	c.t.Helper()
	h := c.read(20)
	if binary.BigEndian.Uint64(h) != optReplyMagic || binary.BigEndian.Uint32(h[8:]) != opt {
		c.t.Fatalf("option reply header %x", h)
	}
	return binary.BigEndian.Uint32(h[12:]), c.read(int(binary.BigEndian.Uint32(h[16:])))
}

func infoData(name string, reqs ...uint16) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(name)))
	b = append(b, name...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(reqs)))
	for _, r := range reqs {
		b = binary.BigEndian.AppendUint16(b, r)
	}
	return b
}

func (c *client) request(typ, flags uint16, handle, off uint64, length uint32, payload []byte) {
	b := binary.BigEndian.AppendUint32(nil, requestMagic)
	b = binary.BigEndian.AppendUint16(b, flags)
	b = binary.BigEndian.AppendUint16(b, typ)
	b = binary.BigEndian.AppendUint64(b, handle)
	b = binary.BigEndian.AppendUint64(b, off)
	b = binary.BigEndian.AppendUint32(b, length)
	c.write(append(b, payload...))
}

// hdr is a request header without flags.
func hdr(typ uint16, handle, off uint64, n uint32) []byte {
	b := binary.BigEndian.AppendUint32(nil, requestMagic)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint16(b, typ)
	b = binary.BigEndian.AppendUint64(b, handle)
	b = binary.BigEndian.AppendUint64(b, off)
	return binary.BigEndian.AppendUint32(b, n)
}

// serveTCP serves s on a loopback TCP connection and returns a client
// in the transmission phase of export "disk".
func serveTCP(t *testing.T, s *Server) *client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	done := make(chan struct{})
	go func() {
		defer close(done)
		if nc, err := ln.Accept(); err == nil {
			s.ServeConn(t.Context(), nc)
		}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close(); <-done })
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	c := &client{t: t, c: nc}
	c.hello(flagFixedNewstyle | flagNoZeroes)
	c.option(optGo, infoData("disk"))
	for {
		if typ, _ := c.reply(optGo); typ == repAck {
			break
		}
	}
	return c
}

// simple reads a simple reply's error and handle.
func (c *client) simple() (errno uint32, handle uint64) {
	c.t.Helper()
	h := c.read(16)
	if binary.BigEndian.Uint32(h) != simpleReplyMagic {
		c.t.Fatalf("reply magic %x", h)
	}
	return binary.BigEndian.Uint32(h[4:]), binary.BigEndian.Uint64(h[8:])
}

func serveTest(t *testing.T, cfg Config) (*client, *memExports) {
	t.Helper()
	exp := &memExports{dev: &memDevice{data: make([]byte, 1<<20)}, owner: "acme"}
	if cfg.Exports == nil {
		cfg.Exports = exp
	}
	if cfg.PlainAllowed == nil {
		// net.Pipe counts as loopback: these tests are about the
		// protocol, not about TLS.
		cfg.PlainAllowed = PlainLoopback
	}
	s := New(cfg)
	a, b := net.Pipe()
	done := make(chan struct{})
	go func() {
		s.ServeConn(t.Context(), a)
		close(done)
	}()
	t.Cleanup(func() {
		b.Close()
		<-done
	})
	b.SetDeadline(time.Now().Add(30 * time.Second))
	return &client{t: t, c: b}, exp
}

func TestHandshakeOptions(t *testing.T) {
	c, _ := serveTest(t, Config{})
	c.hello(flagFixedNewstyle | flagNoZeroes)
	c.option(optList, nil)
	if typ, d := c.reply(optList); typ != repServer || string(d[4:]) != "disk" {
		t.Fatalf("LIST: %d %q", typ, d)
	}
	if typ, _ := c.reply(optList); typ != repAck {
		t.Fatalf("LIST end: %d", typ)
	}
	c.option(optStructuredReply, nil)
	if typ, _ := c.reply(optStructuredReply); typ != repErrUnsup {
		t.Fatalf("STRUCTURED_REPLY: %d", typ)
	}
	c.option(optStartTLS, nil)
	if typ, _ := c.reply(optStartTLS); typ != repErrUnsup {
		t.Fatalf("STARTTLS without TLS: %d", typ)
	}
	c.option(optInfo, infoData("nope"))
	if typ, _ := c.reply(optInfo); typ != repErrUnknown {
		t.Fatalf("INFO unknown: %d", typ)
	}
	c.option(optGo, infoData("broken"))
	if typ, msg := c.reply(optGo); typ != repErrUnknown || !bytes.Contains(msg, []byte("cannot be opened now")) {
		t.Fatalf("GO of an export that fails to open: %d %q", typ, msg)
	}
	c.option(optInfo, []byte{0, 0, 0, 9, 'x'})
	if typ, _ := c.reply(optInfo); typ != repErrInvalid {
		t.Fatalf("INFO malformed: %d", typ)
	}
	c.option(optInfo, infoData("disk", infoBlockSize, infoName))
	var sawExport, sawBlock, sawName bool
	for {
		typ, d := c.reply(optInfo)
		if typ == repAck {
			break
		}
		switch binary.BigEndian.Uint16(d) {
		case infoExport:
			sawExport = binary.BigEndian.Uint64(d[2:]) == 1<<20 && binary.BigEndian.Uint16(d[10:])&tfCanMultiConn != 0
		case infoBlockSize:
			sawBlock = binary.BigEndian.Uint32(d[2:]) == 1 && binary.BigEndian.Uint32(d[6:]) == PreferredBlock && binary.BigEndian.Uint32(d[10:]) == MaxPayload
		case infoName:
			sawName = string(d[2:]) == "disk"
		}
	}
	if !sawExport || !sawBlock || !sawName {
		t.Fatalf("INFO replies: export %v block %v name %v", sawExport, sawBlock, sawName)
	}
	// Too long an option is refused and the connection goes on.
	c.option(99, make([]byte, maxOptionData+1))
	if typ, _ := c.reply(99); typ != repErrTooBig {
		t.Fatalf("long option: %d", typ)
	}
	c.option(optAbort, nil)
	if typ, _ := c.reply(optAbort); typ != repAck {
		t.Fatalf("ABORT: %d", typ)
	}
}

func TestExportNameWithZeroes(t *testing.T) {
	c, _ := serveTest(t, Config{})
	c.hello(flagFixedNewstyle) // no NO_ZEROES: 124 zero bytes follow
	c.option(optExportName, []byte("disk"))
	b := c.read(10 + 124)
	if binary.BigEndian.Uint64(b) != 1<<20 || !bytes.Equal(b[10:], make([]byte, 124)) {
		t.Fatalf("EXPORT_NAME reply %x", b[:10])
	}
	c.request(cmdDisc, 0, 1, 0, 0, nil)
}

func TestTLSRequiredForRemotePeers(t *testing.T) {
	c, _ := serveTest(t, Config{PlainAllowed: func(Peer) bool { return false }})
	c.hello(flagFixedNewstyle | flagNoZeroes)
	c.option(optGo, infoData("disk"))
	if typ, _ := c.reply(optGo); typ != repErrTLSReqd {
		t.Fatalf("GO without TLS: %d", typ)
	}
	c.option(optList, nil)
	if typ, _ := c.reply(optList); typ != repErrTLSReqd {
		t.Fatalf("LIST without TLS: %d", typ)
	}
}

// TestTLSRequiredByExport: a peer allowed to skip TLS may still be
// refused an export; INFO and GO then answer NBD_REP_ERR_TLS_REQD (the
// protocol's selective TLS), not "unknown".
func TestTLSRequiredByExport(t *testing.T) {
	exp := tlsOnly{&memExports{dev: &memDevice{data: make([]byte, 1<<20)}, owner: "acme"}}
	c, _ := serveTest(t, Config{Exports: exp})
	c.hello(flagFixedNewstyle | flagNoZeroes)
	for _, opt := range []uint32{optInfo, optGo} {
		c.option(opt, infoData("disk"))
		if typ, _ := c.reply(opt); typ != repErrTLSReqd {
			t.Fatalf("option %d on a TLS-only export without TLS: %d", opt, typ)
		}
	}
}

// tlsOnly refuses every export to a peer without TLS.
type tlsOnly struct{ *memExports }

func (e tlsOnly) Lookup(ctx context.Context, name string, p Peer) (ExportInfo, error) {
	if !p.TLS {
		return ExportInfo{}, ErrTLSRequired
	}
	return e.memExports.Lookup(ctx, name, p)
}

func (e tlsOnly) Open(ctx context.Context, name string, p Peer) (Device, ExportInfo, error) {
	if !p.TLS {
		return nil, ExportInfo{}, ErrTLSRequired
	}
	return e.memExports.Open(ctx, name, p)
}

func TestTransmission(t *testing.T) {
	c, exp := serveTest(t, Config{})
	exp.dev.slow, exp.dev.slowOff = make(chan struct{}), 4096
	c.hello(flagFixedNewstyle | flagNoZeroes)
	c.option(optGo, infoData("disk"))
	for {
		if typ, _ := c.reply(optGo); typ == repAck {
			break
		}
	}
	payload := bytes.Repeat([]byte{0xab}, 4096)
	c.request(cmdWrite, cmdFlagFUA, 1, 4096, 4096, payload)
	if e, h := c.simple(); e != 0 || h != 1 {
		t.Fatalf("write: %d %d", e, h)
	}
	// A slow read, then a fast one: the fast one is answered first.
	c.request(cmdRead, 0, 2, 4096, 4096, nil)
	c.request(cmdRead, 0, 3, 0, 16, nil)
	if e, h := c.simple(); e != 0 || h != 3 {
		t.Fatalf("first reply: errno %d handle %d, want the fast read (3)", e, h)
	}
	c.read(16)
	close(exp.dev.slow)
	if e, h := c.simple(); e != 0 || h != 2 {
		t.Fatalf("second reply: %d %d", e, h)
	}
	if got := c.read(4096); !bytes.Equal(got, payload) {
		t.Fatal("read back differs")
	}
	// Errors carry their codes and the connection survives them.
	for _, tc := range []struct {
		typ, flags uint16
		off        uint64
		n          uint32
		payload    []byte
		want       uint32
	}{
		{cmdRead, 0, 1 << 20, 1, nil, EINVAL},
		{cmdWrite, 0, 1<<20 - 1, 2, []byte{1, 2}, ENOSPC},
		{cmdWrite, 0, 13, 1, []byte{1}, EPERM}, // the device's own errno
		{cmdWrite, cmdFlagFUA, 17, 1, []byte{1}, ENOSPC},
		{cmdWrite, 0, 19, 1, []byte{1}, EIO},
		{cmdRead, 0, 0, MaxPayload + 1, nil, EINVAL},
		// An oversized write's payload is skipped: the next request is
		// read in step.
		{cmdWrite, 0, 0, MaxPayload + 1, make([]byte, MaxPayload+1), EINVAL},
		// FUA is accepted on every command (old qemu sets it on FLUSH);
		// other flags only where the protocol defines them.
		{cmdRead, cmdFlagFUA, 0, 1, nil, 0},
		{cmdFlush, cmdFlagFUA, 0, 0, nil, 0},
		{cmdRead, cmdFlagNoHole, 0, 1, nil, EINVAL},
		{cmdWrite, 1 << 2, 0, 1, []byte{1}, EINVAL}, // DF: structured replies only
		{cmdFlush, 0, 5, 0, nil, EINVAL},
		{42, 0, 0, 0, nil, EINVAL},
		{cmdTrim, 0, 1<<20 - 10, 20, nil, EINVAL},
	} {
		c.request(tc.typ, tc.flags, 9, tc.off, tc.n, tc.payload)
		if e, h := c.simple(); e != tc.want || h != 9 {
			t.Errorf("request %d flags %d %d+%d: errno %d, want %d", tc.typ, tc.flags, tc.off, tc.n, e, tc.want)
		}
		if tc.want == 0 && tc.typ == cmdRead {
			c.read(int(tc.n))
		}
	}
	c.request(cmdWriteZeroes, cmdFlagNoHole, 4, 4096, 100, nil)
	c.request(cmdFlush, 0, 5, 0, 0, nil)
	for range 2 {
		if e, _ := c.simple(); e != 0 {
			t.Fatalf("zeroes/flush: errno %d", e)
		}
	}
	if exp.dev.noHoles != 1 {
		t.Fatalf("NO_HOLE reached the device %d times, want 1", exp.dev.noHoles)
	}
	c.request(cmdRead, 0, 6, 4096, 200, nil)
	c.simple()
	if got := c.read(200); !bytes.Equal(got[:100], make([]byte, 100)) || got[100] != 0xab {
		t.Fatal("WRITE_ZEROES did not zero exactly its range")
	}
	c.request(cmdDisc, 0, 7, 0, 0, nil)
	if _, err := c.c.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection still open after DISC")
	}
}

// addrConn is a connection that only has a remote address.
type addrConn struct {
	net.Conn
	remote net.Addr
}

func (c addrConn) RemoteAddr() net.Addr { return c.remote }

// TestPeerLoopback: by default no peer may skip TLS; with PlainLoopback
// only loopback peers may, and what counts as loopback is decided from
// the remote address.
func TestPeerLoopback(t *testing.T) {
	if def := New(Config{}); def.cfg.PlainAllowed(Peer{Loopback: true}) {
		t.Error("a loopback peer may skip TLS by default")
	}
	s := New(Config{PlainAllowed: PlainLoopback})
	for _, tc := range []struct {
		addr net.Addr
		want bool
	}{
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 5}, true},
		{&net.TCPAddr{IP: net.ParseIP("127.3.4.5"), Port: 5}, true},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 5}, true},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.1"), Port: 5}, true},
		{&net.UnixAddr{Name: "/run/facet.sock", Net: "unix"}, true},
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 5}, false},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 5}, false},
		{&net.TCPAddr{IP: net.ParseIP("0.0.0.0"), Port: 5}, false},
	} {
		p := peerOf(addrConn{remote: tc.addr})
		if p.Loopback != tc.want || s.cfg.PlainAllowed(p) != tc.want {
			t.Errorf("%v: loopback %v, plain allowed %v, want %v", tc.addr, p.Loopback, s.cfg.PlainAllowed(p), tc.want)
		}
	}
}

// TestLargeWritesOverTCP: over a real TCP connection large payloads are
// read straight from the socket with a raised low water mark
// (readPayload); payloads that arrive in pieces, back to back with the
// next request, or followed by small requests all come through whole,
// and the mark is lowered again for the headers after them.
func TestLargeWritesOverTCP(t *testing.T) {
	c := serveTCP(t, New(Config{PlainAllowed: PlainLoopback, Exports: &memExports{dev: &memDevice{data: make([]byte, 1<<20)}, owner: "acme"}}))
	want := make([]byte, 1<<20)
	for i := range want {
		want[i] = byte(i*7 + i>>12)
	}
	// 512 KiB in three pieces with pauses between them.
	first := append(hdr(cmdWrite, 1, 0, 512<<10), want[:100<<10]...)
	c.write(first)
	time.Sleep(20 * time.Millisecond)
	c.write(want[100<<10 : 300<<10])
	time.Sleep(20 * time.Millisecond)
	c.write(want[300<<10 : 512<<10])
	// Two 256 KiB writes and a 16-byte one in one burst.
	var burst []byte
	burst = append(burst, hdr(cmdWrite, 2, 512<<10, 256<<10)...)
	burst = append(burst, want[512<<10:768<<10]...)
	burst = append(burst, hdr(cmdWrite, 3, 768<<10, 256<<10-16)...)
	burst = append(burst, want[768<<10:1<<20-16]...)
	burst = append(burst, hdr(cmdWrite, 4, 1<<20-16, 16)...)
	burst = append(burst, want[1<<20-16:]...)
	c.write(burst)
	for range 4 {
		if e, h := c.simple(); e != 0 {
			t.Fatalf("write %d: errno %d", h, e)
		}
	}
	c.request(cmdRead, 0, 5, 0, 1<<20, nil)
	if e, _ := c.simple(); e != 0 {
		t.Fatalf("read: errno %d", e)
	}
	if got := c.read(1 << 20); !bytes.Equal(got, want) {
		t.Fatal("read back differs from what was written")
	}
	c.request(cmdDisc, 0, 6, 0, 0, nil)
}

// TestLargeReadsOverTCP: the reader serves a large read itself only when
// no worker has a request of the connection; a large read behind a slow
// one goes to a worker and overtakes it, and a burst of large and small
// reads comes back whole, each under its handle.
func TestLargeReadsOverTCP(t *testing.T) {
	const size = 4 << 20
	dev := &memDevice{data: make([]byte, size), slow: make(chan struct{}), slowOff: 8192}
	for i := range dev.data {
		dev.data[i] = byte(i*13 + i>>14)
	}
	c := serveTCP(t, New(Config{PlainAllowed: PlainLoopback, Exports: &memExports{dev: dev, owner: "acme"}}))
	want := func(off, n int) []byte { return dev.data[off : off+n] }

	c.write(hdr(cmdRead, 1, 8192, 4096)) // waits in a worker
	c.write(hdr(cmdRead, 2, 1<<20, 1<<20))
	if e, h := c.simple(); e != 0 || h != 2 {
		t.Fatalf("first reply: handle %d errno %d, want the large read (2) before the slow one", h, e)
	}
	if !bytes.Equal(c.read(1<<20), want(1<<20, 1<<20)) {
		t.Fatal("large read: wrong data")
	}
	close(dev.slow)
	if e, h := c.simple(); e != 0 || h != 1 {
		t.Fatalf("second reply: handle %d errno %d", h, e)
	}
	if !bytes.Equal(c.read(4096), want(8192, 4096)) {
		t.Fatal("slow read: wrong data")
	}

	reads := map[uint64][2]int{10: {0, 1 << 20}, 11: {1 << 20, 512 << 10}, 12: {3 << 20, 4096}, 13: {2<<20 + 7, 1<<20 - 7}, 14: {size - 300<<10, 300 << 10}}
	var burst []byte
	for h := uint64(10); h <= 14; h++ {
		burst = append(burst, hdr(cmdRead, h, uint64(reads[h][0]), uint32(reads[h][1]))...)
	}
	burst = append(burst, hdr(cmdRead, 15, size-4096, 8192)...) // past the end: EINVAL
	c.write(burst)
	for range len(reads) + 1 {
		e, h := c.simple()
		if h == 15 {
			if e != EINVAL {
				t.Fatalf("read past the end: errno %d, want EINVAL", e)
			}
			continue
		}
		r, ok := reads[h]
		if !ok || e != 0 {
			t.Fatalf("reply handle %d errno %d", h, e)
		}
		if !bytes.Equal(c.read(r[1]), want(r[0], r[1])) {
			t.Fatalf("read %d (%d bytes at %d): wrong data", h, r[1], r[0])
		}
		delete(reads, h)
	}
	c.request(cmdDisc, 0, 16, 0, 0, nil)
}

// TestLoopbackCongestion: a loopback TCP connection gets a congestion
// control that does not pace (cubic, or reno where cubic is not
// allowed); "-" keeps the system's.
func TestLoopbackCongestion(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cc := func(cfg Config) string {
		t.Helper()
		s := New(cfg)
		d, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		nc, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		s.setCongestion(nc)
		rc, err := nc.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var name string
		rc.Control(func(fd uintptr) {
			name, err = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
		})
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimRight(name, "\x00")
	}
	system, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	if err != nil {
		t.Fatal(err)
	}
	if got := cc(Config{}); got != "cubic" && got != "reno" {
		t.Errorf("loopback connection uses %q, want cubic or reno", got)
	}
	if got := cc(Config{LoopbackCongestion: []string{"no-such-control", "reno"}}); got != "reno" {
		t.Errorf("with cubic refused: %q, want reno", got)
	}
	if got, want := cc(Config{LoopbackCongestion: []string{"-"}}), strings.TrimSpace(string(system)); got != want {
		t.Errorf(`with "-": %q, want the system's %q`, got, want)
	}
}

// lockedBuffer is a log destination the connection's goroutine writes to
// while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The log names a peer by "ip:port", not by net.TCPAddr's fields.
func TestPeerLoggedAsAddress(t *testing.T) {
	var logs lockedBuffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	c := serveTCP(t, New(Config{PlainAllowed: PlainLoopback, Logger: log, Exports: &memExports{dev: &memDevice{data: make([]byte, 1<<20)}, owner: "acme"}}))
	// The line follows the handshake's last reply: wait for it.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for line := range strings.SplitSeq(logs.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) != nil || m["msg"] != "nbd export opened" {
				continue
			}
			if m["peer"] != c.c.LocalAddr().String() {
				t.Fatalf("peer %#v, want %q: %s", m["peer"], c.c.LocalAddr(), line)
			}
			return
		}
	}
	t.Fatalf("no export-opened line in %s", logs.String())
}
