package tlspsk

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Conn is a TLS 1.3 connection after a PSK handshake. Read and Write may
// be called concurrently with each other (one reader, one writer at a
// time each, as with crypto/tls).
type Conn struct {
	nc       net.Conn
	r        *bufio.Reader
	identity string
	suite    uint16
	group    uint16

	in struct {
		sync.Mutex
		hc      halfConn
		rec     []byte // the record being read
		pending []byte // decrypted application data not yet returned
		hs      []byte // handshake bytes not yet a whole message
		err     error
	}
	out struct {
		sync.Mutex
		hc  halfConn
		buf []byte
		err error
	}
	closed atomic.Bool
	// retried: the handshake went through a HelloRetryRequest; ccsSent:
	// the middlebox-compatibility change_cipher_spec went out after it,
	// and must not go again.
	retried, ccsSent bool
}

// writeFlush is how much ciphertext WriteBuffers gathers per write
// syscall.
const writeFlush = 256 << 10

func newConn(nc net.Conn) *Conn {
	c := &Conn{nc: nc, r: bufio.NewReaderSize(nc, 2*maxCiphertext)}
	c.in.rec = make([]byte, maxCiphertext+recordHeaderLen)
	return c
}

// Identity is the PSK identity the client proved it holds the key of.
func (c *Conn) Identity() string { return c.identity }

// CipherSuite is the negotiated suite.
func (c *Conn) CipherSuite() uint16 { return c.suite }

// Group is the (EC)DHE group, 0 for psk_ke (no forward secrecy).
func (c *Conn) Group() uint16 { return c.group }

func (c *Conn) LocalAddr() net.Addr                { return c.nc.LocalAddr() }
func (c *Conn) RemoteAddr() net.Addr               { return c.nc.RemoteAddr() }
func (c *Conn) SetDeadline(t time.Time) error      { return c.nc.SetDeadline(t) }
func (c *Conn) SetReadDeadline(t time.Time) error  { return c.nc.SetReadDeadline(t) }
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.nc.SetWriteDeadline(t) }

// readRecord reads one record into c.in.rec and returns its header and
// body. Protected records are not decrypted here.
func (c *Conn) readRecord() (hdr, body []byte, err error) {
	hdr = c.in.rec[:recordHeaderLen]
	if _, err := io.ReadFull(c.r, hdr); err != nil {
		if err == io.ErrUnexpectedEOF {
			err = alertf(alertDecodeError, "connection closed inside a record header")
		}
		return nil, nil, err
	}
	typ, n := hdr[0], int(binary.BigEndian.Uint16(hdr[3:]))
	if typ < typeChangeCipherSpec || typ > typeApplicationData || hdr[1] != 3 {
		return nil, nil, alertf(alertDecodeError, "not a TLS record (type %d, version %#02x%02x)", typ, hdr[1], hdr[2])
	}
	limit := maxPlaintext
	if c.in.hc.aead != nil {
		limit = maxCiphertext
	}
	if n > limit || n == 0 && typ != typeApplicationData {
		return nil, nil, alertf(alertRecordOverflow, "record of %d bytes", n)
	}
	body = c.in.rec[recordHeaderLen : recordHeaderLen+n]
	if _, err := io.ReadFull(c.r, body); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			err = alertf(alertDecodeError, "connection closed inside a record")
		}
		return nil, nil, err
	}
	return hdr, body, nil
}

// readProtected reads the next record after keys are in place and
// returns its content type and content, decrypted in place or, when dst
// has room for the whole record, into dst (sparing a copy of application
// data). A change_cipher_spec record is returned as it is (it is the
// caller's to refuse).
func (c *Conn) readProtected(dst []byte) (byte, []byte, error) {
	hdr, body, err := c.readRecord()
	if err != nil {
		return 0, nil, err
	}
	switch hdr[0] {
	case typeApplicationData:
		if len(dst) < len(body) {
			dst = body
		}
		return c.in.hc.open(dst[:0], hdr, body)
	case typeChangeCipherSpec:
		return typeChangeCipherSpec, body, nil
	}
	// Alerts in the clear included: once keys are in place anyone could
	// forge one.
	return 0, nil, alertf(alertUnexpectedMessage, "unprotected record of type %d", hdr[0])
}

// alertFromPeer turns a received alert into an error.
func alertFromPeer(body []byte) error {
	if len(body) != 2 {
		return alertf(alertDecodeError, "malformed alert")
	}
	if body[1] == alertCloseNotify {
		return errCloseNotify
	}
	return &AlertError{Alert: body[1], Remote: true, Msg: "received"}
}

// nextHandshake returns the next whole handshake message from content
// already read (c.in.hs) or nil when more records are needed.
func (c *Conn) nextHandshake(limit int) ([]byte, error) {
	hs := c.in.hs
	if len(hs) < 4 {
		return nil, nil
	}
	n := int(hs[1])<<16 | int(hs[2])<<8 | int(hs[3])
	if n > limit {
		return nil, alertf(alertIllegalParameter, "handshake message of %d bytes", n)
	}
	if len(hs) < 4+n {
		return nil, nil
	}
	msg := hs[: 4+n : 4+n]
	c.in.hs = hs[4+n:]
	return msg, nil
}

// Read reads application data. A p that can hold a whole record gets it
// decrypted straight into it; what a smaller p cannot take waits in
// c.in.pending.
func (c *Conn) Read(p []byte) (int, error) {
	c.in.Lock()
	defer c.in.Unlock()
	for len(c.in.pending) == 0 {
		if c.in.err != nil {
			return 0, c.in.err
		}
		if len(p) == 0 {
			return 0, nil
		}
		n, err := c.readApp(p)
		if err != nil {
			c.in.err = c.fail(err)
		}
		if n > 0 {
			return n, nil
		}
	}
	n := copy(p, c.in.pending)
	c.in.pending = c.in.pending[n:]
	return n, nil
}

// readApp reads one record after the handshake. Application data lands
// in p (n > 0) when it fits whole, else in c.in.pending.
func (c *Conn) readApp(p []byte) (int, error) {
	typ, content, err := c.readProtected(p)
	if err != nil {
		return 0, err
	}
	switch typ {
	case typeApplicationData:
		if len(content) > 0 && &content[0] == &p[0] {
			return len(content), nil
		}
		c.in.pending = content
		return 0, nil
	case typeAlert:
		return 0, alertFromPeer(content)
	case typeHandshake:
		c.in.hs = append(c.in.hs, content...)
		for {
			msg, err := c.nextHandshake(1 << 10)
			if err != nil || msg == nil {
				return 0, err
			}
			if err := c.postHandshake(msg); err != nil {
				return 0, err
			}
		}
	}
	return 0, alertf(alertUnexpectedMessage, "record of type %d after the handshake", typ)
}

// postHandshake handles a handshake message after the handshake: only
// KeyUpdate is legal from a client.
func (c *Conn) postHandshake(msg []byte) error {
	if msg[0] != msgKeyUpdate {
		return alertf(alertUnexpectedMessage, "handshake message %d after the handshake", msg[0])
	}
	if len(msg) != 5 || msg[4] > 1 {
		return alertf(alertDecodeError, "malformed KeyUpdate")
	}
	if len(c.in.hs) != 0 {
		// The key changes at the message's end: nothing may follow it
		// in the same record (RFC 8446 §5.1).
		return alertf(alertUnexpectedMessage, "data after a KeyUpdate in its record")
	}
	if err := c.in.hc.setSecret(c.in.hc.suite, nextSecret(c.in.hc.secret)); err != nil {
		return err
	}
	if msg[4] == 1 {
		c.out.Lock()
		defer c.out.Unlock()
		if c.out.err != nil {
			return c.out.err
		}
		c.out.buf = c.keyUpdate(c.out.buf[:0])
		if _, err := c.nc.Write(c.out.buf); err != nil {
			c.out.err = err
			return err
		}
	}
	return nil
}

// keyUpdate appends our KeyUpdate (update_not_requested) and switches
// the write keys. c.out is held.
func (c *Conn) keyUpdate(buf []byte) []byte {
	buf = c.out.hc.appendRecord(buf, typeHandshake, handshakeMsg(msgKeyUpdate, []byte{0}))
	// setSecret fails only for a key of the wrong length, which
	// expandLabel never makes.
	_ = c.out.hc.setSecret(c.out.hc.suite, nextSecret(c.out.hc.secret))
	return buf
}

// fail reports a local failure to the peer with its alert and returns
// the error Read returns from then on.
func (c *Conn) fail(err error) error {
	if errors.Is(err, errCloseNotify) {
		return io.EOF
	}
	var ae *AlertError
	if errors.As(err, &ae) && !ae.Remote {
		c.sendAlert(ae.Alert)
	}
	return err
}

// sendAlert sends a fatal alert (or close_notify) with whatever write
// keys are in place.
func (c *Conn) sendAlert(desc byte) {
	c.out.Lock()
	defer c.out.Unlock()
	if c.out.err != nil {
		return
	}
	level := byte(2)
	if desc == alertCloseNotify {
		level = 1
	}
	c.out.buf = c.out.hc.appendRecord(c.out.buf[:0], typeAlert, []byte{level, desc})
	c.nc.Write(c.out.buf)
	c.out.err = net.ErrClosed
}

// Write writes application data.
func (c *Conn) Write(p []byte) (int, error) {
	n, err := c.WriteBuffers([][]byte{p})
	return int(n), err
}

// WriteBuffers writes the concatenation of v, packing it into full
// records regardless of the buffers' boundaries and sending the records
// in few syscalls: a reply header and its data go out as one record.
func (c *Conn) WriteBuffers(v [][]byte) (int64, error) {
	c.out.Lock()
	defer c.out.Unlock()
	if c.out.err != nil {
		return 0, c.out.err
	}
	var (
		total int64
		buf   = c.out.buf[:0]
		i, j  int // v[i][j:] is next
	)
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		_, err := c.nc.Write(buf)
		buf = buf[:0]
		if err != nil {
			c.out.err = err
		}
		return err
	}
	for {
		for i < len(v) && j == len(v[i]) {
			i, j = i+1, 0
		}
		if i == len(v) {
			break
		}
		start := len(buf)
		buf = append(buf, make([]byte, recordHeaderLen)...)
		n := 0
		for n < maxPlaintext && i < len(v) {
			take := min(len(v[i])-j, maxPlaintext-n)
			buf = append(buf, v[i][j:j+take]...)
			n, j = n+take, j+take
			if j == len(v[i]) {
				i, j = i+1, 0
			}
		}
		buf = c.out.hc.sealRecord(buf, start, typeApplicationData)
		total += int64(n)
		if c.out.hc.seq >= rekeyAfter {
			buf = c.keyUpdate(buf)
		}
		if len(buf) >= writeFlush {
			if err := flush(); err != nil {
				return total, err
			}
		}
	}
	err := flush()
	if cap(buf) <= 2*writeFlush {
		c.out.buf = buf[:0]
	}
	return total, err
}

// Close sends close_notify and closes the connection.
func (c *Conn) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return net.ErrClosed
	}
	// A writer blocked on a peer that does not read must not keep Close
	// waiting for the lock forever.
	c.nc.SetWriteDeadline(time.Now().Add(2 * time.Second))
	c.sendAlert(alertCloseNotify)
	return c.nc.Close()
}

var _ net.Conn = (*Conn)(nil)

// String describes the session for logs: identity, suite, group (0:
// psk_ke) and whether a HelloRetryRequest was needed.
func (c *Conn) String() string {
	return fmt.Sprintf("TLS 1.3 PSK identity=%q suite=%#04x group=%#04x hrr=%v", c.identity, c.suite, c.group, c.retried)
}
