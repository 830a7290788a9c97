package tlspsk

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/crypto/chacha20poly1305"
)

// Cipher suites (RFC 8446 §B.4), in the server's order of preference:
// AES-GCM first (AES-NI makes it the cheapest here), ChaCha20-Poly1305
// for clients that put it first. Only SHA-256 suites: an external PSK
// with no hash of its own is bound to SHA-256 (RFC 8446 §4.2.11), so a
// SHA-384 suite could not use it.
const (
	TLS_AES_128_GCM_SHA256       uint16 = 0x1301
	TLS_CHACHA20_POLY1305_SHA256 uint16 = 0x1303
)

type suite struct {
	id     uint16
	keyLen int
	aead   func(key []byte) (cipher.AEAD, error)
}

var suites = []suite{
	{TLS_AES_128_GCM_SHA256, 16, func(key []byte) (cipher.AEAD, error) {
		b, err := aes.NewCipher(key)
		if err != nil {
			return nil, err
		}
		return cipher.NewGCM(b)
	}},
	{TLS_CHACHA20_POLY1305_SHA256, chacha20poly1305.KeySize, chacha20poly1305.New},
}

// Record layer limits (RFC 8446 §5).
const (
	recordHeaderLen = 5
	maxPlaintext    = 1 << 14
	// maxCiphertext is the largest TLSCiphertext fragment: plaintext,
	// content type and at most 255 bytes of padding and tag.
	maxCiphertext = maxPlaintext + 256
	// rekeyAfter sends a KeyUpdate well before AES-GCM's 2^24.5-record
	// confidentiality limit (RFC 8446 §5.5).
	rekeyAfter = 1 << 24
)

// Content types.
const (
	typeChangeCipherSpec byte = 20
	typeAlert            byte = 21
	typeHandshake        byte = 22
	typeApplicationData  byte = 23
)

// Alert descriptions sent on failure.
const (
	alertCloseNotify          byte = 0
	alertUnexpectedMessage    byte = 10
	alertBadRecordMAC         byte = 20
	alertRecordOverflow       byte = 22
	alertHandshakeFailure     byte = 40
	alertIllegalParameter     byte = 47
	alertDecodeError          byte = 50
	alertDecryptError         byte = 51
	alertProtocolVersion      byte = 70
	alertInternalError        byte = 80
	alertMissingExtension     byte = 109
	alertUnsupportedExtension byte = 110
)

// AlertError is a failure that was, or is to be, reported with an alert.
type AlertError struct {
	Alert byte
	// Remote is set when the peer sent the alert.
	Remote bool
	Msg    string
}

func (e *AlertError) Error() string {
	who := "local"
	if e.Remote {
		who = "remote"
	}
	return fmt.Sprintf("tls-psk: %s alert %d: %s", who, e.Alert, e.Msg)
}

func alertf(alert byte, format string, args ...any) error {
	return &AlertError{Alert: alert, Msg: fmt.Sprintf(format, args...)}
}

// errCloseNotify is the peer's orderly close.
var errCloseNotify = errors.New("tls-psk: close_notify")

// halfConn protects one direction of a connection.
type halfConn struct {
	suite  *suite
	aead   cipher.AEAD
	iv     [12]byte
	seq    uint64
	secret []byte
	// nonceBuf is the current record's nonce, kept here so that sealing
	// a record allocates nothing.
	nonceBuf [12]byte
}

// setSecret installs the keys of a traffic secret and restarts the
// sequence numbers.
func (h *halfConn) setSecret(s *suite, secret []byte) error {
	aead, err := s.aead(expandLabel(secret, "key", nil, s.keyLen))
	if err != nil {
		return fmt.Errorf("tls-psk: %w", err)
	}
	copy(h.iv[:], expandLabel(secret, "iv", nil, 12))
	h.suite, h.aead, h.seq, h.secret = s, aead, 0, secret
	return nil
}

func (h *halfConn) nonce() []byte {
	h.nonceBuf = h.iv
	for i := range 8 {
		h.nonceBuf[4+i] ^= byte(h.seq >> (56 - 8*i))
	}
	return h.nonceBuf[:]
}

// appendRecord appends a record of typ carrying payload to out. Without
// keys it is a plaintext record (the ServerHello and early alerts).
func (h *halfConn) appendRecord(out []byte, typ byte, payload []byte) []byte {
	if h.aead == nil {
		out = append(out, typ, 3, 3)
		out = binary.BigEndian.AppendUint16(out, uint16(len(payload)))
		return append(out, payload...)
	}
	start := len(out)
	out = append(out, make([]byte, recordHeaderLen)...)
	out = append(out, payload...)
	return h.sealRecord(out, start, typ)
}

// sealRecord protects the record that starts at out[start]: a header's
// room, then the content, up to the end of out.
func (h *halfConn) sealRecord(out []byte, start int, typ byte) []byte {
	n := len(out) - start - recordHeaderLen + 1 + h.aead.Overhead()
	out = slices.Grow(out, 1+h.aead.Overhead())
	out = append(out, typ)
	hdr := out[start : start+recordHeaderLen]
	hdr[0], hdr[1], hdr[2], hdr[3], hdr[4] = typeApplicationData, 3, 3, byte(n>>8), byte(n)
	inner := out[start+recordHeaderLen:]
	// Sealing in place: the capacity grown above holds the tag.
	sealed := h.aead.Seal(inner[:0], h.nonce(), inner, hdr)
	h.seq++
	return out[:start+recordHeaderLen+len(sealed)]
}

// open decrypts a protected record into dst (body[:0]: in place; or a
// buffer apart from body with room for it) and returns its real content
// type and content. hdr is the record header, the additional data.
func (h *halfConn) open(dst, hdr, body []byte) (byte, []byte, error) {
	if len(body) < h.aead.Overhead()+1 || len(body) > maxCiphertext {
		return 0, nil, alertf(alertRecordOverflow, "protected record of %d bytes", len(body))
	}
	pt, err := h.aead.Open(dst, h.nonce(), body, hdr)
	if err != nil {
		return 0, nil, alertf(alertBadRecordMAC, "record authentication failed")
	}
	h.seq++
	// The content type is the last non-zero byte; zeros after it pad.
	i := len(pt) - 1
	for i >= 0 && pt[i] == 0 {
		i--
	}
	if i < 0 {
		return 0, nil, alertf(alertUnexpectedMessage, "record of padding only")
	}
	if i > maxPlaintext {
		return 0, nil, alertf(alertRecordOverflow, "record of %d bytes of content", i)
	}
	return pt[i], pt[:i], nil
}
