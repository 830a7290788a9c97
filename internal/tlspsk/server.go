package tlspsk

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/hmac"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"slices"
	"time"
)

// ErrUnknownIdentity is what Config.Key returns for an identity it has
// no key for.
var ErrUnknownIdentity = errors.New("tls-psk: unknown PSK identity")

// Config configures a Server.
type Config struct {
	// Key returns the key of a PSK identity, or ErrUnknownIdentity.
	// Other errors abort the handshake with internal_error.
	Key func(ctx context.Context, identity string) ([]byte, error)
	// Fallback, when set, takes over connections whose ClientHello
	// offers no PSK: a crypto/tls server (certificates). Its verified
	// client certificate's common name is then the identity.
	Fallback *tls.Config
}

// Server runs TLS-PSK handshakes.
type Server struct{ cfg Config }

// NewServer returns a server.
func NewServer(cfg Config) *Server { return &Server{cfg: cfg} }

// maxIdentities bounds the identities one ClientHello may make the
// server look up.
const maxIdentities = 8

// maxSkippedEarlyData bounds the 0-RTT bytes skipped unread.
const maxSkippedEarlyData = 1 << 20

// Handshake runs the server side of a handshake on nc, whose ClientHello
// is the next thing on the wire, and returns the protected connection and
// the client's identity. On failure the client has been sent an alert
// and nc is left to the caller to close. Cancelling ctx aborts a
// handshake in progress.
func (s *Server) Handshake(ctx context.Context, nc net.Conn) (net.Conn, string, error) {
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	conn, id, err := s.handshake(ctx, nc)
	if !stop() && err == nil {
		// ctx ended just as the handshake did: nc's deadline is gone.
		return nil, "", fmt.Errorf("tls-psk handshake: %w", ctx.Err())
	}
	return conn, id, err
}

func (s *Server) handshake(ctx context.Context, nc net.Conn) (net.Conn, string, error) {
	c := newConn(nc)
	hello, raw, err := c.readClientHello(false)
	if err != nil {
		return nil, "", c.handshakeFailed(ctx, err)
	}
	if !hello.hasPSK && !hello.offersTLS13() && hello.offersTLS12PSK() {
		// Certificates would only confuse a PSK client: say what is wrong.
		return nil, "", c.handshakeFailed(ctx, alertf(alertProtocolVersion, "client offers TLS 1.2 PSK only; this server speaks TLS 1.3 PSK"))
	}
	if !hello.hasPSK && s.cfg.Fallback != nil {
		return s.fallback(ctx, nc, io.MultiReader(bytes.NewReader(raw), c.r))
	}
	if err := s.serverHandshake(ctx, c, hello); err != nil {
		return nil, "", c.handshakeFailed(ctx, err)
	}
	return c, c.identity, nil
}

func (c *Conn) handshakeFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("tls-psk handshake: %w", ctx.Err())
	}
	c.fail(err)
	return fmt.Errorf("tls-psk handshake: %w", err)
}

// readClientHello reads the plaintext records that carry the ClientHello
// and returns it with the raw records, for a fallback to replay them.
// After a HelloRetryRequest (retry) one change_cipher_spec may come
// first.
func (c *Conn) readClientHello(retry bool) (*clientHello, []byte, error) {
	var raw []byte
	for {
		hdr, body, err := c.readRecord()
		if err != nil {
			return nil, nil, err
		}
		if retry && hdr[0] == typeChangeCipherSpec && len(body) == 1 && body[0] == 1 && len(raw) == 0 && len(c.in.hs) == 0 {
			retry = false
			continue
		}
		if hdr[0] == typeAlert {
			return nil, nil, alertFromPeer(body)
		}
		if hdr[0] != typeHandshake {
			return nil, nil, alertf(alertUnexpectedMessage, "record of type %d before the ClientHello", hdr[0])
		}
		raw = append(append(raw, hdr...), body...)
		c.in.hs = append(c.in.hs, body...)
		msg, err := c.nextHandshake(1 << 16)
		if err != nil {
			return nil, nil, err
		}
		if msg == nil {
			continue
		}
		if len(c.in.hs) != 0 {
			return nil, nil, alertf(alertUnexpectedMessage, "data after the ClientHello in its record")
		}
		ch, err := parseClientHello(msg)
		return ch, raw, err
	}
}

// serverHandshake answers a ClientHello that offers PSKs.
func (s *Server) serverHandshake(ctx context.Context, c *Conn, ch *clientHello) error {
	switch {
	case !ch.offersTLS13():
		return alertf(alertProtocolVersion, "client does not offer TLS 1.3 (only TLS 1.3 PSK is served)")
	case len(ch.compression) != 1 || ch.compression[0] != 0:
		return alertf(alertIllegalParameter, "TLS 1.3 ClientHello with compression methods %x", ch.compression)
	case !ch.hasPSK:
		return alertf(alertHandshakeFailure, "client offers no pre-shared key")
	case !ch.hasModes:
		return alertf(alertMissingExtension, "pre_shared_key without psk_key_exchange_modes")
	}
	var st *suite
	for i := range suites {
		for _, id := range ch.suites {
			if id == suites[i].id && st == nil {
				st = &suites[i]
			}
		}
	}
	if st == nil {
		return alertf(alertHandshakeFailure, "no common cipher suite (TLS_AES_128_GCM_SHA256 or TLS_CHACHA20_POLY1305_SHA256 needed)")
	}

	sched, index, err := s.selectPSK(ctx, c, ch, sumOf(ch.truncated))
	if err != nil {
		return err
	}

	// psk_dhe_ke whenever the client allows it: with its x25519 or P-256
	// share, or after a HelloRetryRequest for one of them it supports.
	// psk_ke only when that is all the client allows, or when it
	// supports neither group.
	transcript := newHash()
	var out []byte
	group, retried := ch.pickShare(), false
	if ch.allowsMode(modePSKDHE) && group == 0 {
		if g := ch.pickGroup(); g != 0 {
			if ch, sched, index, err = s.helloRetry(ctx, c, ch, st, g, transcript); err != nil {
				return err
			}
			group, retried = g, true
		} else if !ch.allowsMode(modePSK) {
			return alertf(alertHandshakeFailure, "psk_dhe_ke, but the client supports neither x25519 nor secp256r1")
		}
	}
	if !retried {
		transcript.Write(ch.raw)
	}
	if !ch.allowsMode(modePSKDHE) {
		group = 0
	}
	var shared []byte
	var share *keyShare
	if group != 0 {
		curve := ecdh.X25519()
		if group == groupSecp256r1 {
			curve = ecdh.P256()
		}
		peer, err := curve.NewPublicKey(ch.share(group))
		if err != nil {
			return alertf(alertIllegalParameter, "invalid key share for group %#04x", group)
		}
		priv, err := curve.GenerateKey(rand.Reader)
		if err != nil {
			return &AlertError{Alert: alertInternalError, Msg: err.Error()}
		}
		if shared, err = priv.ECDH(peer); err != nil {
			return alertf(alertIllegalParameter, "key share for group %#04x: %v", group, err)
		}
		share = &keyShare{group: group, data: priv.PublicKey().Bytes()}
		c.group = group
	}
	c.suite = st.id

	random := make([]byte, 32)
	rand.Read(random)
	sh := serverHello(random, ch.sessionID, st.id, index, share, 0)
	transcript.Write(sh)
	out = c.out.hc.appendRecord(out, typeHandshake, sh)
	if len(ch.sessionID) > 0 && !c.ccsSent {
		out = append(out, ccsRecord...)
	}
	sched.setShared(shared)
	clientHS, serverHS := sched.handshakeSecrets(transcript.Sum(nil))
	if err := c.out.hc.setSecret(st, serverHS); err != nil {
		return err
	}
	if err := c.in.hc.setSecret(st, clientHS); err != nil {
		return err
	}
	ee := handshakeMsg(msgEncryptedExtensions, []byte{0, 0})
	transcript.Write(ee)
	fin := handshakeMsg(msgFinished, finishedMAC(serverHS, transcript.Sum(nil)))
	transcript.Write(fin)
	out = c.out.hc.appendRecord(out, typeHandshake, append(ee, fin...))
	if _, err := c.nc.Write(out); err != nil {
		return err
	}
	thServerFinished := transcript.Sum(nil)
	clientApp, serverApp := sched.appSecrets(thServerFinished)
	if err := c.out.hc.setSecret(st, serverApp); err != nil {
		return err
	}

	msg, err := c.readClientFinished(ch.earlyData)
	if err != nil {
		return err
	}
	if msg[0] != msgFinished {
		return alertf(alertUnexpectedMessage, "handshake message %d where the client Finished was expected", msg[0])
	}
	if !hmac.Equal(msg[4:], finishedMAC(clientHS, thServerFinished)) {
		return alertf(alertDecryptError, "client Finished does not verify")
	}
	if len(c.in.hs) != 0 {
		return alertf(alertUnexpectedMessage, "data after the client Finished in its record")
	}
	return c.in.hc.setSecret(st, clientApp)
}

// ccsRecord is the dummy change_cipher_spec of middlebox compatibility
// (RFC 8446 §D.4): a client that sent a session id expects one right
// after our first handshake message.
var ccsRecord = []byte{typeChangeCipherSpec, 3, 3, 0, 1, 1}

// selectPSK picks the first identity of ch that has a key and checks its
// binder over binderHash (the transcript up to the binders).
func (s *Server) selectPSK(ctx context.Context, c *Conn, ch *clientHello, binderHash []byte) (*schedule, int, error) {
	for i, id := range ch.identities {
		if i == maxIdentities {
			break
		}
		key, err := s.cfg.Key(ctx, string(id.identity))
		if errors.Is(err, ErrUnknownIdentity) {
			continue
		}
		if err != nil {
			return nil, 0, &AlertError{Alert: alertInternalError, Msg: fmt.Sprintf("looking up PSK identity %q: %v", clip(id.identity), err)}
		}
		sched := newSchedule(key)
		if !hmac.Equal(sched.binder(labelExtBinder, binderHash), ch.binders[i]) {
			// RFC 8446 §4.2.11: a binder that does not validate aborts.
			return nil, 0, alertf(alertDecryptError, "PSK binder of identity %q does not verify: the client's key is not this identity's", clip(id.identity))
		}
		c.identity = string(id.identity)
		return sched, i, nil
	}
	// decrypt_error rather than unknown_psk_identity, as RFC 8446 §6.2
	// allows: a client learns nothing about which names exist.
	return nil, 0, alertf(alertDecryptError, "no known PSK identity among %q", identityNames(ch.identities))
}

// helloRetry sends a HelloRetryRequest for a share of group and returns
// the second ClientHello with its PSK checked again. transcript then
// holds message_hash(ClientHello1), the HelloRetryRequest and
// ClientHello2 (RFC 8446 §4.4.1).
func (s *Server) helloRetry(ctx context.Context, c *Conn, ch1 *clientHello, st *suite, group uint16, transcript hash.Hash) (*clientHello, *schedule, int, error) {
	c.retried = true
	prefix := append([]byte{msgMessageHash, 0, 0, hashLen}, sumOf(ch1.raw)...)
	hrr := serverHello(helloRetryRandom, ch1.sessionID, st.id, -1, nil, group)
	prefix = append(prefix, hrr...)
	out := c.out.hc.appendRecord(nil, typeHandshake, hrr)
	if len(ch1.sessionID) > 0 {
		out = append(out, ccsRecord...)
		c.ccsSent = true
	}
	if _, err := c.nc.Write(out); err != nil {
		return nil, nil, 0, err
	}
	ch, _, err := c.readClientHello(true)
	if err != nil {
		return nil, nil, 0, err
	}
	switch {
	case !ch.hasPSK || !ch.hasModes || !ch.offersTLS13():
		return nil, nil, 0, alertf(alertIllegalParameter, "the second ClientHello drops TLS 1.3 or its PSK")
	case !bytes.Equal(ch.sessionID, ch1.sessionID):
		return nil, nil, 0, alertf(alertIllegalParameter, "the second ClientHello changes the session id")
	case len(ch.shares) != 1 || ch.share(group) == nil:
		return nil, nil, 0, alertf(alertIllegalParameter, "the second ClientHello lacks the one key share asked for (group %#04x)", group)
	case ch.earlyData:
		return nil, nil, 0, alertf(alertIllegalParameter, "early data offered after a HelloRetryRequest")
	case !slices.Contains(ch.suites, st.id):
		return nil, nil, 0, alertf(alertIllegalParameter, "the second ClientHello drops the cipher suite")
	}
	sched, index, err := s.selectPSK(ctx, c, ch, sumOf(append(prefix, ch.truncated...)))
	if err != nil {
		return nil, nil, 0, err
	}
	transcript.Write(prefix)
	transcript.Write(ch.raw)
	return ch, sched, index, nil
}

// readClientFinished reads the client's second flight: an optional
// change_cipher_spec, then its Finished. Offered 0-RTT data, which we
// never accept, fails to decrypt under the handshake key and is skipped.
func (c *Conn) readClientFinished(earlyData bool) ([]byte, error) {
	skipped, ccs := 0, false
	for {
		hdr, body, err := c.readRecord()
		if err != nil {
			return nil, err
		}
		switch hdr[0] {
		case typeChangeCipherSpec:
			if ccs || len(body) != 1 || body[0] != 1 || len(c.in.hs) != 0 {
				return nil, alertf(alertUnexpectedMessage, "unexpected change_cipher_spec")
			}
			ccs = true
			continue
		case typeAlert:
			return nil, alertFromPeer(body)
		case typeApplicationData:
		default:
			return nil, alertf(alertUnexpectedMessage, "unprotected record of type %d after the ServerHello", hdr[0])
		}
		seq := c.in.hc.seq
		typ, content, err := c.in.hc.open(body[:0], hdr, body)
		if err != nil && earlyData && seq == 0 && skipped+len(body) <= maxSkippedEarlyData {
			skipped += len(body)
			continue
		}
		if err != nil {
			return nil, err
		}
		earlyData = false
		switch typ {
		case typeAlert:
			return nil, alertFromPeer(content)
		case typeHandshake:
		default:
			return nil, alertf(alertUnexpectedMessage, "record of type %d before the client Finished", typ)
		}
		c.in.hs = append(c.in.hs, content...)
		msg, err := c.nextHandshake(hashLen)
		if err != nil {
			return nil, err
		}
		if msg != nil {
			if len(msg) != 4+hashLen {
				return nil, alertf(alertDecodeError, "client Finished of %d bytes", len(msg)-4)
			}
			return msg, nil
		}
	}
}

// fallback hands a connection without PSK to crypto/tls.
func (s *Server) fallback(ctx context.Context, nc net.Conn, r io.Reader) (net.Conn, string, error) {
	tc := tls.Server(&replayConn{Conn: nc, r: r}, s.cfg.Fallback)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, "", fmt.Errorf("tls handshake (certificates): %w", err)
	}
	var id string
	if st := tc.ConnectionState(); len(st.PeerCertificates) > 0 {
		id = st.PeerCertificates[0].Subject.CommonName
	}
	return tc, id, nil
}

// replayConn reads bytes already consumed before the rest of the stream.
type replayConn struct {
	net.Conn
	r io.Reader
}

func (c *replayConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func sumOf(b []byte) []byte {
	h := newHash()
	h.Write(b)
	return h.Sum(nil)
}

// identityNames lists the identities a client offered, each clipped:
// they end up in logs and come from anyone.
func identityNames(ids []pskIdentity) []string {
	out := make([]string, 0, min(len(ids), maxIdentities))
	for i, id := range ids {
		if i == maxIdentities {
			out = append(out, fmt.Sprintf("(%d more)", len(ids)-i))
			break
		}
		out = append(out, clip(id.identity))
	}
	return out
}

func clip(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "…"
	}
	return string(b)
}
