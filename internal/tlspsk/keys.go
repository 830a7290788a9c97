// Package tlspsk owns a server-side TLS 1.3 handshake authenticated by
// external pre-shared keys (RFC 8446 §4.2.11, psk_dhe_ke and psk_ke), and
// the record layer that follows it, exposed as a net.Conn.
//
// Go's crypto/tls implements neither TLS 1.2 PSK cipher suites nor TLS
// 1.3 external PSKs, while the NBD clients (qemu's tls-creds-psk, libnbd's
// tls-psk-file, nbdkit) authenticate tenants with GnuTLS PSK credentials.
// GnuTLS offers TLS 1.3 first and binds external PSKs to SHA-256, so this
// package speaks exactly that: TLS 1.3 only, the SHA-256 suites
// (TLS_AES_128_GCM_SHA256, TLS_CHACHA20_POLY1305_SHA256), X25519 or
// secp256r1 for the (EC)DHE part, asked for with a HelloRetryRequest when
// the client supports one but sent no share of it. There is no
// certificate, no session ticket and no early data (offered early data is
// skipped, as RFC 8446 §4.2.10 lets a server do). A ClientHello without a
// pre_shared_key extension can be handed to crypto/tls (Config.Fallback),
// so certificate clients keep working on the same port.
package tlspsk

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"hash"
)

// hashLen is SHA-256's output: every secret of the schedule has it.
const hashLen = sha256.Size

// Binder labels (RFC 8446 §7.1): external PSKs bind with "ext binder";
// "res binder" serves the RFC 8448 resumption trace the tests replay.
const (
	labelExtBinder = "ext binder"
	labelResBinder = "res binder"
)

var emptyHash = sha256.Sum256(nil)

func newHash() hash.Hash { return sha256.New() }

// extract is HKDF-Extract with SHA-256; a nil salt is Hash.length zeros.
func extract(salt, ikm []byte) []byte {
	if ikm == nil {
		ikm = make([]byte, hashLen)
	}
	prk, err := hkdf.Extract(newHash, ikm, salt)
	if err != nil {
		panic("tlspsk: hkdf extract: " + err.Error()) // only for FIPS-rejected inputs, which these are not
	}
	return prk
}

// expandLabel is HKDF-Expand-Label (RFC 8446 §7.1).
func expandLabel(secret []byte, label string, context []byte, n int) []byte {
	info := make([]byte, 0, 4+6+len(label)+len(context))
	info = binary.BigEndian.AppendUint16(info, uint16(n))
	info = append(info, byte(6+len(label)))
	info = append(info, "tls13 "...)
	info = append(info, label...)
	info = append(info, byte(len(context)))
	info = append(info, context...)
	out, err := hkdf.Expand(newHash, secret, string(info), n)
	if err != nil {
		panic("tlspsk: hkdf expand: " + err.Error()) // n is always within 255*hashLen
	}
	return out
}

// deriveSecret is Derive-Secret with the transcript hash already taken.
func deriveSecret(secret []byte, label string, transcriptHash []byte) []byte {
	return expandLabel(secret, label, transcriptHash, hashLen)
}

// finishedMAC is the verify_data of a Finished message, and a PSK binder
// when base is the binder key.
func finishedMAC(base, transcriptHash []byte) []byte {
	m := hmac.New(newHash, expandLabel(base, "finished", nil, hashLen))
	m.Write(transcriptHash)
	return m.Sum(nil)
}

// schedule is the key schedule of one handshake (RFC 8446 §7.1).
type schedule struct {
	early, handshake, master []byte
}

func newSchedule(psk []byte) *schedule {
	return &schedule{early: extract(nil, psk)}
}

// binder is the binder of a ClientHello truncated before its binders.
func (s *schedule) binder(label string, truncatedHelloHash []byte) []byte {
	return finishedMAC(deriveSecret(s.early, label, emptyHash[:]), truncatedHelloHash)
}

// setShared enters the (EC)DHE shared secret; nil for psk_ke.
func (s *schedule) setShared(shared []byte) {
	s.handshake = extract(deriveSecret(s.early, "derived", emptyHash[:]), shared)
	s.master = extract(deriveSecret(s.handshake, "derived", emptyHash[:]), nil)
}

// handshakeSecrets are the client and server handshake traffic secrets
// after ClientHello..ServerHello.
func (s *schedule) handshakeSecrets(th []byte) (client, server []byte) {
	return deriveSecret(s.handshake, "c hs traffic", th), deriveSecret(s.handshake, "s hs traffic", th)
}

// appSecrets are the first application traffic secrets after
// ClientHello..server Finished.
func (s *schedule) appSecrets(th []byte) (client, server []byte) {
	return deriveSecret(s.master, "c ap traffic", th), deriveSecret(s.master, "s ap traffic", th)
}

// nextSecret is the traffic secret after a KeyUpdate (RFC 8446 §7.2).
func nextSecret(secret []byte) []byte { return expandLabel(secret, "traffic upd", nil, hashLen) }
