package tlspsk

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// streamConn is a net.Conn whose peer sent a fixed byte stream and
// ignores what it is sent.
type streamConn struct {
	r   *bytes.Reader
	out bytes.Buffer
}

func (c *streamConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *streamConn) Write(p []byte) (int, error)      { return c.out.Write(p) }
func (c *streamConn) Close() error                     { return nil }
func (c *streamConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *streamConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *streamConn) SetDeadline(time.Time) error      { return nil }
func (c *streamConn) SetReadDeadline(time.Time) error  { return nil }
func (c *streamConn) SetWriteDeadline(time.Time) error { return nil }

// capturedHello is the first flight of the test client.
func capturedHello(t testing.TB, o clientOpts) []byte {
	c := &streamConn{r: bytes.NewReader(nil)}
	clientHandshake(c, o) // fails at the ServerHello it cannot read
	return c.out.Bytes()
}

// retryStream is a client's side of a HelloRetryRequest exchange up to
// its second ClientHello: the server's answer is fixed by the first, so
// the second can be made in advance.
func retryStream(key []byte) []byte {
	o := defaultOpts("alice", key)
	o.groups, o.supportedGroups = nil, []uint16{groupX25519}
	random := make([]byte, 32)
	ch1, _ := buildHello(o, random, nil, nil)
	hrr := serverHello(helloRetryRandom, random, TLS_AES_128_GCM_SHA256, -1, nil, groupX25519)
	ch2, _ := buildHello(o, random, []uint16{groupX25519}, append(append([]byte{msgMessageHash, 0, 0, hashLen}, sumOf(ch1)...), hrr...))
	var plain halfConn
	stream := plain.appendRecord(nil, typeHandshake, ch1)
	stream = append(stream, ccsRecord...)
	return plain.appendRecord(stream, typeHandshake, ch2)
}

// TestRetryStream: the fuzz seed gets through the HelloRetryRequest and
// both binders, to where the client's Finished is due.
func TestRetryStream(t *testing.T) {
	key := bytes.Repeat([]byte{1}, 32)
	srv := NewServer(Config{Key: func(context.Context, string) ([]byte, error) { return key, nil }})
	c := &streamConn{r: bytes.NewReader(retryStream(key))}
	_, _, err := srv.Handshake(context.Background(), c)
	if err == nil || !errors.Is(err, io.EOF) {
		t.Fatalf("want EOF where the Finished is due, got %v", err)
	}
	if !bytes.Contains(c.out.Bytes(), helloRetryRandom) {
		t.Fatal("no HelloRetryRequest was sent")
	}
}

func FuzzClientHello(f *testing.F) {
	f.Add(rfcClientHello(f))
	for _, o := range []clientOpts{defaultOpts("alice", make([]byte, 32)), {identity: "x", key: []byte{1}, extraIDs: []string{"a", "b"}}} {
		rec := capturedHello(f, o)
		f.Add(rec[recordHeaderLen:])
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		ch, err := parseClientHello(msg)
		if err != nil {
			if _, ok := err.(*AlertError); !ok {
				t.Fatalf("error without an alert: %v", err)
			}
			return
		}
		if ch.hasPSK {
			if len(ch.identities) == 0 || len(ch.identities) != len(ch.binders) || !bytes.HasPrefix(msg, ch.truncated) || len(ch.truncated) >= len(msg) {
				t.Fatalf("inconsistent PSK offer: %d identities, %d binders, truncated %d of %d", len(ch.identities), len(ch.binders), len(ch.truncated), len(msg))
			}
		}
	})
}

// FuzzHandshake feeds a server arbitrary client bytes: it must end with
// a result or an error, never panic or hang.
func FuzzHandshake(f *testing.F) {
	key := bytes.Repeat([]byte{1}, 32)
	f.Add(capturedHello(f, defaultOpts("alice", key)))
	o := defaultOpts("alice", key)
	o.fragment, o.earlyData = true, []byte("0rtt")
	f.Add(capturedHello(f, o))
	f.Add(append([]byte{typeHandshake, 3, 1, 0x02, 0x00}, rfcClientHello(f)...))
	f.Add(retryStream(key))
	srv := NewServer(Config{Key: func(_ context.Context, id string) ([]byte, error) {
		if id == "alice" {
			return key, nil
		}
		return nil, ErrUnknownIdentity
	}})
	f.Fuzz(func(t *testing.T, stream []byte) {
		c := &streamConn{r: bytes.NewReader(stream)}
		if conn, _, err := srv.Handshake(context.Background(), c); err == nil {
			conn.Close()
		}
	})
}

// FuzzRecords feeds an established connection arbitrary records: Read
// must return data or an error, never panic.
func FuzzRecords(f *testing.F) {
	secret := bytes.Repeat([]byte{3}, 32)
	var hc halfConn
	hc.setSecret(&suites[0], secret)
	var seed []byte
	seed = hc.appendRecord(seed, typeApplicationData, []byte("hello"))
	seed = hc.appendRecord(seed, typeApplicationData, nil)
	seed = hc.appendRecord(seed, typeHandshake, handshakeMsg(msgKeyUpdate, []byte{1}))
	f.Add(seed)
	var alert halfConn
	alert.setSecret(&suites[0], secret)
	f.Add(alert.appendRecord(nil, typeAlert, []byte{1, 0}))
	f.Add(append([]byte{typeApplicationData, 3, 3, 0x40, 0x11}, make([]byte, 0x4011)...))
	f.Fuzz(func(t *testing.T, stream []byte) {
		c := newConn(&streamConn{r: bytes.NewReader(stream)})
		c.in.hc.setSecret(&suites[0], secret)
		c.out.hc.setSecret(&suites[0], secret)
		buf := make([]byte, 1000)
		for i := 0; ; i++ {
			n, err := c.Read(buf)
			if err != nil {
				if n != 0 {
					t.Fatalf("%d bytes with error %v", n, err)
				}
				if err == io.EOF {
					return
				}
				if _, ok := err.(*AlertError); !ok && err != io.ErrUnexpectedEOF {
					t.Fatalf("unexpected error type %T: %v", err, err)
				}
				return
			}
			if i > len(stream) {
				t.Fatal("Read makes no progress")
			}
		}
	})
}
