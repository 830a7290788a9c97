package tlspsk

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/cryptobyte"
)

// A minimal TLS 1.3 PSK client, enough to drive the server through every
// branch the real clients (GnuTLS in qemu and libnbd, exercised by the
// e2e tests) do not reach: wrong keys, unknown names, missing shares,
// psk_ke, KeyUpdate, 0-RTT offers, fragmented messages. Its record layer
// is the package's own Conn with the directions swapped.

type clientOpts struct {
	identity   string
	key        []byte
	suites     []uint16
	modes      []byte
	groups     []uint16 // key shares to send
	versions   []uint16
	sessionID  bool
	earlyData  []byte // sent as a 0-RTT record the server must skip
	fragment   bool   // ClientHello split over records of 100 bytes
	extraIDs   []string
	badBinder  bool
	badFinish  bool
	noPSKModes bool
	// supportedGroups, when set, is sent as supported_groups.
	supportedGroups []uint16
}

func defaultOpts(identity string, key []byte) clientOpts {
	return clientOpts{identity: identity, key: key, suites: []uint16{0x1302, TLS_AES_128_GCM_SHA256, TLS_CHACHA20_POLY1305_SHA256},
		modes: []byte{modePSKDHE, modePSK}, groups: []uint16{groupSecp256r1, groupX25519}, versions: []uint16{versionTLS13, 0x0303}, sessionID: true}
}

// clientHandshake runs the client side on nc and returns the client's
// Conn, or the alert the server sent.
// buildHello builds a ClientHello with key shares of shareGroups whose
// binders cover prefix (after a HelloRetryRequest) and the hello itself.
func buildHello(o clientOpts, random []byte, shareGroups []uint16, prefix []byte) ([]byte, map[uint16]*ecdh.PrivateKey) {
	privs := map[uint16]*ecdh.PrivateKey{}
	var b cryptobyte.Builder
	b.AddUint8(msgClientHello)
	b.AddUint24LengthPrefixed(func(b *cryptobyte.Builder) {
		b.AddUint16(0x0303)
		b.AddBytes(random)
		b.AddUint8LengthPrefixed(func(b *cryptobyte.Builder) {
			if o.sessionID {
				b.AddBytes(random)
			}
		})
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
			for _, s := range o.suites {
				b.AddUint16(s)
			}
		})
		b.AddUint8LengthPrefixed(func(b *cryptobyte.Builder) { b.AddUint8(0) })
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
			b.AddUint16(extSupportedVersions)
			b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
				b.AddUint8LengthPrefixed(func(b *cryptobyte.Builder) {
					for _, v := range o.versions {
						b.AddUint16(v)
					}
				})
			})
			if !o.noPSKModes {
				b.AddUint16(extPSKModes)
				b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
					b.AddUint8LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(o.modes) })
				})
			}
			b.AddUint16(extKeyShare)
			b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
				b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
					for _, g := range shareGroups {
						curve := ecdh.X25519()
						if g == groupSecp256r1 {
							curve = ecdh.P256()
						}
						k, _ := curve.GenerateKey(rand.Reader)
						privs[g] = k
						b.AddUint16(g)
						b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(k.PublicKey().Bytes()) })
					}
				})
			})
			if len(o.supportedGroups) > 0 {
				b.AddUint16(extSupportedGroups)
				b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
					b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
						for _, g := range o.supportedGroups {
							b.AddUint16(g)
						}
					})
				})
			}
			if o.earlyData != nil && prefix == nil {
				b.AddUint16(extEarlyData)
				b.AddUint16(0)
			}
			b.AddUint16(extPreSharedKey)
			b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
				ids := append(append([]string{}, o.extraIDs...), o.identity)
				b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
					for _, id := range ids {
						b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(id)) })
						b.AddUint32(0)
					}
				})
				b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
					for range ids {
						b.AddUint8LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(make([]byte, 32)) })
					}
				})
			})
		})
	})
	ch := b.BytesOrPanic()
	// The binder of our identity is the last one: fill it in.
	sched := newSchedule(o.key)
	bindersLen := 2 + 33*(len(o.extraIDs)+1)
	binder := sched.binder(labelExtBinder, sumOf(append(append([]byte(nil), prefix...), ch[:len(ch)-bindersLen]...)))
	if o.badBinder {
		binder[0] ^= 1
	}
	copy(ch[len(ch)-32:], binder)
	for i := range o.extraIDs {
		copy(ch[len(ch)-bindersLen+2+33*i+1:], binder) // wrong binders for names the server must not know
	}

	return ch, privs
}

func clientHandshake(nc net.Conn, o clientOpts) (*Conn, error) {
	c := newConn(nc)
	send := func(out, ch []byte) error {
		if o.fragment {
			for rest := ch; len(rest) > 0; {
				n := min(100, len(rest))
				out = c.out.hc.appendRecord(out, typeHandshake, rest[:n])
				rest = rest[n:]
			}
		} else {
			out = c.out.hc.appendRecord(out, typeHandshake, ch)
		}
		_, err := nc.Write(out)
		return err
	}
	// serverHello reads the next ServerHello, in plaintext, skipping the
	// change_cipher_spec that may follow a HelloRetryRequest.
	serverHello := func() ([]byte, error) {
		for {
			hdr, body, err := c.readRecord()
			if err != nil {
				return nil, err
			}
			switch hdr[0] {
			case typeAlert:
				return nil, alertFromPeer(body)
			case typeChangeCipherSpec:
				continue
			}
			return append([]byte(nil), body...), nil
		}
	}
	random := make([]byte, 32)
	rand.Read(random)
	ch, privs := buildHello(o, random, o.groups, nil)
	if err := send(nil, ch); err != nil {
		return nil, err
	}
	body, err := serverHello()
	if err != nil {
		return nil, err
	}
	th, sentCCS := newHash(), false
	if len(body) >= 38 && bytes.Equal(body[6:38], helloRetryRandom) {
		// HelloRetryRequest: its key_share names the group to send.
		i := bytes.Index(body, []byte{0, byte(extKeyShare), 0, 2})
		if i < 0 {
			return nil, errors.New("client: HelloRetryRequest without a group")
		}
		group := uint16(body[i+4])<<8 | uint16(body[i+5])
		prefix := append(append([]byte{msgMessageHash, 0, 0, hashLen}, sumOf(ch)...), body...)
		var ch2 []byte
		ch2, privs = buildHello(o, random, []uint16{group}, prefix)
		var ccs []byte
		if o.sessionID {
			ccs, sentCCS = append(ccs, ccsRecord...), true
		}
		if err := send(ccs, ch2); err != nil {
			return nil, err
		}
		if body, err = serverHello(); err != nil {
			return nil, err
		}
		th.Write(prefix)
		ch = ch2
	}
	sched := newSchedule(o.key)
	sh := cryptobyte.String(append([]byte(nil), body...))
	var (
		typ         uint8
		shBody      cryptobyte.String
		ver, chosen uint16
		rnd, sid    []byte
		comp        uint8
		exts        cryptobyte.String
		selected    = -1
		serverShare []byte
		group       uint16
	)
	if !sh.ReadUint8(&typ) || typ != msgServerHello || !sh.ReadUint24LengthPrefixed(&shBody) ||
		!shBody.ReadUint16(&ver) || !shBody.ReadBytes(&rnd, 32) || !shBody.ReadUint8LengthPrefixed((*cryptobyte.String)(&sid)) ||
		!shBody.ReadUint16(&chosen) || !shBody.ReadUint8(&comp) || !shBody.ReadUint16LengthPrefixed(&exts) {
		return nil, errors.New("client: malformed ServerHello")
	}
	for !exts.Empty() {
		var (
			ext  uint16
			data cryptobyte.String
		)
		exts.ReadUint16(&ext)
		exts.ReadUint16LengthPrefixed(&data)
		switch ext {
		case extPreSharedKey:
			var i uint16
			data.ReadUint16(&i)
			selected = int(i)
		case extKeyShare:
			var ks cryptobyte.String
			data.ReadUint16(&group)
			data.ReadUint16LengthPrefixed(&ks)
			serverShare = ks
		}
	}
	if selected != len(o.extraIDs) {
		return nil, fmt.Errorf("client: server selected identity %d", selected)
	}
	var st *suite
	for i := range suites {
		if suites[i].id == chosen {
			st = &suites[i]
		}
	}
	if st == nil {
		return nil, fmt.Errorf("client: server chose suite %#x", chosen)
	}
	var shared []byte
	if serverShare != nil {
		curve := ecdh.X25519()
		if group == groupSecp256r1 {
			curve = ecdh.P256()
		}
		pub, err := curve.NewPublicKey(serverShare)
		if err != nil {
			return nil, err
		}
		if shared, err = privs[group].ECDH(pub); err != nil {
			return nil, err
		}
	}
	c.group, c.suite = group, chosen
	th.Write(ch)
	th.Write(body)
	sched.setShared(shared)
	clientHS, serverHS := sched.handshakeSecrets(th.Sum(nil))
	c.in.hc.setSecret(st, serverHS)
	c.out.hc.setSecret(st, clientHS)
	if o.earlyData != nil {
		// 0-RTT under a key the server never derives.
		var early halfConn
		early.setSecret(st, bytes.Repeat([]byte{7}, 32))
		if _, err := nc.Write(early.appendRecord(nil, typeApplicationData, o.earlyData)); err != nil {
			return nil, err
		}
	}

	// EncryptedExtensions and Finished.
	var msgs [][]byte
	for len(msgs) < 2 {
		typ, content, err := c.readProtected(nil)
		if err != nil {
			return nil, err
		}
		switch typ {
		case typeChangeCipherSpec:
			continue
		case typeAlert:
			return nil, alertFromPeer(content)
		case typeHandshake:
		default:
			return nil, fmt.Errorf("client: record type %d in the server's flight", typ)
		}
		c.in.hs = append(c.in.hs, content...)
		for {
			m, err := c.nextHandshake(1 << 14)
			if err != nil {
				return nil, err
			}
			if m == nil {
				break
			}
			msgs = append(msgs, append([]byte(nil), m...))
		}
	}
	if msgs[0][0] != msgEncryptedExtensions || msgs[1][0] != msgFinished {
		return nil, errors.New("client: unexpected server flight")
	}
	th.Write(msgs[0])
	if !hmac.Equal(msgs[1][4:], finishedMAC(serverHS, th.Sum(nil))) {
		return nil, errors.New("client: server Finished does not verify")
	}
	th.Write(msgs[1])
	clientApp, serverApp := sched.appSecrets(th.Sum(nil))
	fin := finishedMAC(clientHS, th.Sum(nil))
	if o.badFinish {
		fin[0] ^= 1
	}
	var out []byte
	if o.sessionID && !sentCCS {
		out = append(out, ccsRecord...)
	}
	out = c.out.hc.appendRecord(out, typeHandshake, handshakeMsg(msgFinished, fin))
	if _, err := nc.Write(out); err != nil {
		return nil, err
	}
	c.in.hc.setSecret(st, serverApp)
	c.out.hc.setSecret(st, clientApp)
	c.identity = o.identity
	return c, nil
}

// testServer serves one connection per test with keys for alice and bob.
type testServer struct {
	keys map[string][]byte
	srv  *Server
}

func newTestServer(fallback *tls.Config) *testServer {
	ts := &testServer{keys: map[string][]byte{"alice": bytes.Repeat([]byte{1}, 32), "bob": bytes.Repeat([]byte{2}, 32)}}
	ts.srv = NewServer(Config{Fallback: fallback, Key: func(_ context.Context, id string) ([]byte, error) {
		if k, ok := ts.keys[id]; ok {
			return k, nil
		}
		return nil, ErrUnknownIdentity
	}})
	return ts
}

// pair runs a handshake over loopback TCP and returns both ends (nil on
// failure) and both errors.
func (ts *testServer) pair(t testing.TB, o clientOpts) (server net.Conn, id string, serr error, client *Conn, cerr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		nc, err := ln.Accept()
		if err != nil {
			serr = err
			return
		}
		server, id, serr = ts.srv.Handshake(context.Background(), nc)
		if serr != nil {
			nc.Close()
		}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	client, cerr = clientHandshake(nc, o)
	if cerr != nil {
		nc.Close()
	}
	<-done
	if serr == nil && cerr == nil {
		t.Cleanup(func() { server.Close(); client.Close() })
	}
	return
}

func wantAlert(t *testing.T, err error, alert byte) {
	t.Helper()
	var ae *AlertError
	if !errors.As(err, &ae) || ae.Alert != alert {
		t.Fatalf("want alert %d, got %v", alert, err)
	}
}

func TestHandshakeVariants(t *testing.T) {
	ts := newTestServer(nil)
	alice := ts.keys["alice"]
	cases := []struct {
		name  string
		mod   func(o *clientOpts)
		suite uint16
		group uint16
	}{
		{"x25519 preferred, AES-GCM preferred", func(o *clientOpts) {}, TLS_AES_128_GCM_SHA256, groupX25519},
		{"secp256r1 only", func(o *clientOpts) { o.groups = []uint16{groupSecp256r1} }, TLS_AES_128_GCM_SHA256, groupSecp256r1},
		{"chacha20 only", func(o *clientOpts) { o.suites = []uint16{TLS_CHACHA20_POLY1305_SHA256} }, TLS_CHACHA20_POLY1305_SHA256, groupX25519},
		{"psk_ke without shares", func(o *clientOpts) { o.groups = nil; o.modes = []byte{modePSK} }, TLS_AES_128_GCM_SHA256, 0},
		{"psk_dhe_ke preferred over psk_ke", func(o *clientOpts) { o.modes = []byte{modePSK, modePSKDHE} }, TLS_AES_128_GCM_SHA256, groupX25519},
		{"no session id, no CCS", func(o *clientOpts) { o.sessionID = false }, TLS_AES_128_GCM_SHA256, groupX25519},
		{"fragmented ClientHello", func(o *clientOpts) { o.fragment = true }, TLS_AES_128_GCM_SHA256, groupX25519},
		{"unknown identities first", func(o *clientOpts) { o.extraIDs = []string{"mallory", "eve"} }, TLS_AES_128_GCM_SHA256, groupX25519},
		{"0-RTT skipped", func(o *clientOpts) { o.earlyData = []byte("early, never read") }, TLS_AES_128_GCM_SHA256, groupX25519},
		{"HelloRetryRequest for x25519", func(o *clientOpts) {
			o.groups, o.supportedGroups = []uint16{0x0018}, []uint16{0x0018, groupX25519, groupSecp256r1}
		}, TLS_AES_128_GCM_SHA256, groupX25519},
		{"HelloRetryRequest for P-256, no session id, fragmented", func(o *clientOpts) {
			o.groups, o.supportedGroups, o.sessionID, o.fragment = nil, []uint16{groupSecp256r1}, false, true
		}, TLS_AES_128_GCM_SHA256, groupSecp256r1},
		{"HelloRetryRequest rather than psk_ke", func(o *clientOpts) {
			o.groups, o.supportedGroups, o.extraIDs = nil, []uint16{groupX25519}, []string{"eve"}
		}, TLS_AES_128_GCM_SHA256, groupX25519},
		{"psk_ke when no group is shared", func(o *clientOpts) { o.groups, o.supportedGroups = []uint16{0x0018}, []uint16{0x0018} }, TLS_AES_128_GCM_SHA256, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := defaultOpts("alice", alice)
			tc.mod(&o)
			s, id, serr, c, cerr := ts.pair(t, o)
			if serr != nil || cerr != nil {
				t.Fatalf("server: %v; client: %v", serr, cerr)
			}
			pc := s.(*Conn)
			if id != "alice" || pc.CipherSuite() != tc.suite || pc.Group() != tc.group || c.Group() != tc.group {
				t.Fatalf("identity %q suite %#x group %#x (client %#x)", id, pc.CipherSuite(), pc.Group(), c.Group())
			}
			if want := strings.HasPrefix(tc.name, "HelloRetryRequest"); pc.retried != want {
				t.Fatalf("HelloRetryRequest sent: %v, want %v", pc.retried, want)
			}
			roundTrip(t, s, c, 100<<10)
		})
	}
}

func TestHandshakeRefusals(t *testing.T) {
	ts := newTestServer(nil)
	alice, bob := ts.keys["alice"], ts.keys["bob"]
	cases := []struct {
		name  string
		o     clientOpts
		mod   func(o *clientOpts)
		alert byte
	}{
		{"another tenant's key for the name", defaultOpts("alice", bob), nil, alertDecryptError},
		{"a random key", defaultOpts("alice", bytes.Repeat([]byte{9}, 32)), nil, alertDecryptError},
		{"unknown identity", defaultOpts("mallory", alice), nil, alertDecryptError},
		{"bad binder", defaultOpts("alice", alice), func(o *clientOpts) { o.badBinder = true }, alertDecryptError},
		{"bad client Finished", defaultOpts("alice", alice), func(o *clientOpts) { o.badFinish = true }, alertDecryptError},
		{"TLS 1.2 only", defaultOpts("alice", alice), func(o *clientOpts) { o.versions = []uint16{0x0303} }, alertProtocolVersion},
		{"SHA-384 suite only", defaultOpts("alice", alice), func(o *clientOpts) { o.suites = []uint16{0x1302} }, alertHandshakeFailure},
		{"psk_dhe_ke without a usable share", defaultOpts("alice", alice), func(o *clientOpts) { o.groups = nil; o.modes = []byte{modePSKDHE} }, alertHandshakeFailure},
		{"no psk_key_exchange_modes", defaultOpts("alice", alice), func(o *clientOpts) { o.noPSKModes = true }, alertMissingExtension},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.mod != nil {
				tc.mod(&tc.o)
			}
			_, _, serr, c, cerr := ts.pair(t, tc.o)
			wantAlert(t, serr, tc.alert)
			if tc.o.badFinish {
				// The client finished its part; the alert reaches its
				// first read.
				if cerr != nil {
					t.Fatal(cerr)
				}
				_, cerr = c.Read(make([]byte, 1))
				c.Close()
			}
			var ae *AlertError
			if !errors.As(cerr, &ae) || !ae.Remote || ae.Alert != tc.alert {
				t.Fatalf("client got %v, want remote alert %d", cerr, tc.alert)
			}
		})
	}
}

// roundTrip echoes n bytes written in odd-sized pieces from the client,
// then the server sends them back in one WriteBuffers call.
func roundTrip(t *testing.T, s net.Conn, c *Conn, n int) {
	t.Helper()
	data := make([]byte, n)
	rand.Read(data)
	errc := make(chan error, 1)
	go func() {
		got := make([]byte, n)
		if _, err := io.ReadFull(s, got); err != nil {
			errc <- err
			return
		}
		_, err := s.(*Conn).WriteBuffers([][]byte{got[:7], nil, got[7 : n/2], got[n/2:]})
		errc <- err
	}()
	for rest := data; len(rest) > 0; {
		k := min(len(rest), 12345)
		if _, err := c.Write(rest[:k]); err != nil {
			t.Fatal(err)
		}
		rest = rest[k:]
	}
	back := make([]byte, n)
	if _, err := io.ReadFull(c, back); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, data) {
		t.Fatal("data changed on the way")
	}
}

// TestKeyUpdateAndClose: a client KeyUpdate asking for ours switches both
// directions; traffic flows on; close_notify is an EOF.
func TestKeyUpdateAndClose(t *testing.T) {
	ts := newTestServer(nil)
	s, _, serr, c, cerr := ts.pair(t, defaultOpts("bob", ts.keys["bob"]))
	if serr != nil || cerr != nil {
		t.Fatalf("server: %v; client: %v", serr, cerr)
	}
	sc := s.(*Conn)
	oldIn, oldOut := sc.in.hc.secret, sc.out.hc.secret
	c.out.Lock()
	c.out.buf = c.out.hc.appendRecord(c.out.buf[:0], typeHandshake, handshakeMsg(msgKeyUpdate, []byte{1}))
	c.out.hc.setSecret(c.out.hc.suite, nextSecret(c.out.hc.secret))
	_, err := c.nc.Write(c.out.buf)
	c.out.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, s, c, 40<<10)
	if bytes.Equal(sc.in.hc.secret, oldIn) || bytes.Equal(sc.out.hc.secret, oldOut) {
		t.Fatal("KeyUpdate did not change the server's keys")
	}
	if !bytes.Equal(c.in.hc.secret, sc.out.hc.secret) {
		t.Fatal("the client did not follow the server's KeyUpdate")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Fatalf("after close_notify: %d, %v", n, err)
	}
}

// TestConcurrentReadWrite runs a reader and a writer on both ends at once
// (for -race): NBD replies are written while requests are read.
func TestConcurrentReadWrite(t *testing.T) {
	ts := newTestServer(nil)
	s, _, serr, c, cerr := ts.pair(t, defaultOpts("alice", ts.keys["alice"]))
	if serr != nil || cerr != nil {
		t.Fatalf("server: %v; client: %v", serr, cerr)
	}
	const n = 1 << 20
	var wg sync.WaitGroup
	for _, ends := range [][2]net.Conn{{s, c}, {c, s}} {
		wg.Add(2)
		go func() {
			defer wg.Done()
			buf := bytes.Repeat([]byte{0x5a}, 3000)
			for sent := 0; sent < n; sent += len(buf) {
				if _, err := ends[0].Write(buf); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			got, err := io.ReadAll(io.LimitReader(ends[1], int64((n+2999)/3000*3000)))
			if err != nil || len(got) != (n+2999)/3000*3000 || bytes.Count(got, []byte{0x5a}) != len(got) {
				t.Errorf("read %d bytes: %v", len(got), err)
			}
		}()
	}
	wg.Wait()
}

// TestFallbackToCertificates: a ClientHello without PSK goes to
// crypto/tls, whose verified client certificate names the peer.
func TestFallbackToCertificates(t *testing.T) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, _ := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	ca, _ := x509.ParseCertificate(caDER)
	leaf := func(cn string, usage x509.ExtKeyUsage) tls.Certificate {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn}, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
		der, _ := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	ts := newTestServer(&tls.Config{Certificates: []tls.Certificate{leaf("server", x509.ExtKeyUsageServerAuth)},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		conn net.Conn
		id   string
		err  error
	}
	res := make(chan result, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			res <- result{err: err}
			return
		}
		conn, id, err := ts.srv.Handshake(context.Background(), nc)
		res <- result{conn, id, err}
	}()
	tc, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{leaf("carol", x509.ExtKeyUsageClientAuth)}})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	r := <-res
	if r.err != nil || r.id != "carol" {
		t.Fatalf("fallback: %q %v", r.id, r.err)
	}
	defer r.conn.Close()
	go r.conn.Write([]byte("hello"))
	got := make([]byte, 5)
	if _, err := io.ReadFull(tc, got); err != nil || string(got) != "hello" {
		t.Fatalf("%q %v", got, err)
	}
}

// TestHandshakeCancelled: cancelling the context ends a handshake that
// waits for a silent client.
func TestHandshakeCancelled(t *testing.T) {
	ts := newTestServer(nil)
	a, b := net.Pipe()
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, _, err := ts.srv.Handshake(ctx, a)
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

// BenchmarkThroughput: 1 MiB NBD-like replies (a 16-byte header and the
// data, one WriteBuffers call) from the server to the client over
// loopback TCP, per suite.
func BenchmarkThroughput(b *testing.B) {
	for _, s := range []uint16{TLS_AES_128_GCM_SHA256, TLS_CHACHA20_POLY1305_SHA256} {
		b.Run(fmt.Sprintf("%#04x", s), func(b *testing.B) {
			ts := newTestServer(nil)
			o := defaultOpts("alice", ts.keys["alice"])
			o.suites = []uint16{s}
			srv, _, serr, c, cerr := ts.pair(b, o)
			if serr != nil || cerr != nil {
				b.Fatal(serr, cerr)
			}
			hdr, data := make([]byte, 16), make([]byte, 1<<20)
			done := make(chan error, 1)
			go func() {
				_, err := io.CopyN(io.Discard, c, int64(b.N)*int64(len(hdr)+len(data)))
				done <- err
			}()
			b.SetBytes(int64(len(hdr) + len(data)))
			b.ResetTimer()
			for range b.N {
				if _, err := srv.(*Conn).WriteBuffers([][]byte{hdr, data}); err != nil {
					b.Fatal(err)
				}
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkRead: the other direction, what an NBD server reads of 1 MiB
// writes (the client's Write, the server's Read through a bufio.Reader as
// the NBD transmission loop has).
func BenchmarkRead(b *testing.B) {
	ts := newTestServer(nil)
	srv, _, serr, c, cerr := ts.pair(b, defaultOpts("alice", ts.keys["alice"]))
	if serr != nil || cerr != nil {
		b.Fatal(serr, cerr)
	}
	data := make([]byte, 1<<20)
	go func() {
		for range b.N {
			if _, err := c.Write(data); err != nil {
				return
			}
		}
	}()
	in := bufio.NewReaderSize(srv, 256<<10)
	buf := make([]byte, len(data))
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		if _, err := io.ReadFull(in, buf); err != nil {
			b.Fatal(err)
		}
	}
}
