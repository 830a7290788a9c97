package tlspsk

import (
	"slices"

	"golang.org/x/crypto/cryptobyte"
)

// Handshake message types.
const (
	msgClientHello         byte = 1
	msgServerHello         byte = 2
	msgNewSessionTicket    byte = 4
	msgEncryptedExtensions byte = 8
	msgFinished            byte = 20
	msgKeyUpdate           byte = 24
)

// Extensions this server reads or writes.
const (
	extSupportedVersions uint16 = 43
	extPSKModes          uint16 = 45
	extKeyShare          uint16 = 51
	extPreSharedKey      uint16 = 41
	extEarlyData         uint16 = 42
	extSupportedGroups   uint16 = 10
)

// Named groups of the (EC)DHE part.
const (
	groupSecp256r1 uint16 = 0x0017
	groupX25519    uint16 = 0x001d
)

// PSK key exchange modes.
const (
	modePSK    byte = 0 // psk_ke
	modePSKDHE byte = 1 // psk_dhe_ke
)

const versionTLS13 uint16 = 0x0304

type keyShare struct {
	group uint16
	data  []byte
}

type pskIdentity struct {
	identity []byte
	age      uint32
}

// clientHello is what the server uses of a ClientHello.
type clientHello struct {
	raw         []byte // the whole handshake message, header included
	random      []byte
	sessionID   []byte
	compression []byte
	suites      []uint16
	versions    []uint16
	pskModes    []byte
	hasModes    bool
	shares      []keyShare
	hasShares   bool
	groups      []uint16 // supported_groups
	identities  []pskIdentity
	binders     [][]byte
	hasPSK      bool
	earlyData   bool
	// truncated is raw up to the binders list: what binders sign.
	truncated []byte
}

// parseClientHello parses a handshake message that must be a
// ClientHello. Failures are alert errors (decode_error for bytes that do
// not parse, illegal_parameter for rules RFC 8446 states).
func parseClientHello(msg []byte) (*clientHello, error) {
	s := cryptobyte.String(msg)
	var (
		typ  uint8
		body cryptobyte.String
	)
	if !s.ReadUint8(&typ) || !s.ReadUint24LengthPrefixed(&body) || !s.Empty() {
		return nil, alertf(alertDecodeError, "malformed handshake message")
	}
	if typ != msgClientHello {
		return nil, alertf(alertUnexpectedMessage, "handshake message %d where a ClientHello was expected", typ)
	}
	ch := &clientHello{raw: msg}
	var (
		legacyVersion uint16
		sid, cs, comp cryptobyte.String
	)
	if !body.ReadUint16(&legacyVersion) || !body.ReadBytes(&ch.random, 32) ||
		!body.ReadUint8LengthPrefixed(&sid) || len(sid) > 32 ||
		!body.ReadUint16LengthPrefixed(&cs) || len(cs) == 0 || len(cs)%2 != 0 ||
		!body.ReadUint8LengthPrefixed(&comp) {
		return nil, alertf(alertDecodeError, "malformed ClientHello")
	}
	ch.sessionID, ch.compression = sid, comp
	for !cs.Empty() {
		var id uint16
		cs.ReadUint16(&id)
		ch.suites = append(ch.suites, id)
	}
	if body.Empty() {
		// A ClientHello without extensions is TLS 1.2 or older.
		return ch, nil
	}
	var exts cryptobyte.String
	if !body.ReadUint16LengthPrefixed(&exts) || !body.Empty() {
		return nil, alertf(alertDecodeError, "malformed ClientHello extensions")
	}
	seen := map[uint16]bool{}
	for !exts.Empty() {
		var (
			ext  uint16
			data cryptobyte.String
		)
		if !exts.ReadUint16(&ext) || !exts.ReadUint16LengthPrefixed(&data) {
			return nil, alertf(alertDecodeError, "malformed extension")
		}
		if seen[ext] {
			return nil, alertf(alertIllegalParameter, "extension %d appears twice", ext)
		}
		seen[ext] = true
		if ch.hasPSK {
			return nil, alertf(alertIllegalParameter, "pre_shared_key is not the last extension")
		}
		switch ext {
		case extSupportedVersions:
			var list cryptobyte.String
			if !data.ReadUint8LengthPrefixed(&list) || len(list) < 2 || len(list)%2 != 0 || !data.Empty() {
				return nil, alertf(alertDecodeError, "malformed supported_versions")
			}
			for !list.Empty() {
				var v uint16
				list.ReadUint16(&v)
				ch.versions = append(ch.versions, v)
			}
		case extPSKModes:
			var list cryptobyte.String
			if !data.ReadUint8LengthPrefixed(&list) || len(list) == 0 || !data.Empty() {
				return nil, alertf(alertDecodeError, "malformed psk_key_exchange_modes")
			}
			ch.pskModes, ch.hasModes = list, true
		case extKeyShare:
			var list cryptobyte.String
			if !data.ReadUint16LengthPrefixed(&list) || !data.Empty() {
				return nil, alertf(alertDecodeError, "malformed key_share")
			}
			ch.hasShares = true
			for !list.Empty() {
				var (
					ks  keyShare
					key cryptobyte.String
				)
				if !list.ReadUint16(&ks.group) || !list.ReadUint16LengthPrefixed(&key) || len(key) == 0 {
					return nil, alertf(alertDecodeError, "malformed key share")
				}
				ks.data = key
				ch.shares = append(ch.shares, ks)
			}
		case extSupportedGroups:
			var list cryptobyte.String
			if !data.ReadUint16LengthPrefixed(&list) || len(list) < 2 || len(list)%2 != 0 || !data.Empty() {
				return nil, alertf(alertDecodeError, "malformed supported_groups")
			}
			for !list.Empty() {
				var g uint16
				list.ReadUint16(&g)
				ch.groups = append(ch.groups, g)
			}
		case extEarlyData:
			if !data.Empty() {
				return nil, alertf(alertDecodeError, "malformed early_data")
			}
			ch.earlyData = true
		case extPreSharedKey:
			var ids, binders cryptobyte.String
			if !data.ReadUint16LengthPrefixed(&ids) || len(ids) == 0 {
				return nil, alertf(alertDecodeError, "malformed pre_shared_key identities")
			}
			for !ids.Empty() {
				var (
					id  pskIdentity
					idb cryptobyte.String
				)
				if !ids.ReadUint16LengthPrefixed(&idb) || len(idb) == 0 || !ids.ReadUint32(&id.age) {
					return nil, alertf(alertDecodeError, "malformed PSK identity")
				}
				id.identity = idb
				ch.identities = append(ch.identities, id)
			}
			bindersLen := len(data)
			if !data.ReadUint16LengthPrefixed(&binders) || len(binders) == 0 || !data.Empty() {
				return nil, alertf(alertDecodeError, "malformed pre_shared_key binders")
			}
			for !binders.Empty() {
				var b cryptobyte.String
				if !binders.ReadUint8LengthPrefixed(&b) || len(b) < 32 {
					return nil, alertf(alertDecodeError, "malformed PSK binder")
				}
				ch.binders = append(ch.binders, b)
			}
			if len(ch.binders) != len(ch.identities) {
				return nil, alertf(alertIllegalParameter, "%d PSK identities but %d binders", len(ch.identities), len(ch.binders))
			}
			ch.hasPSK = true
			// pre_shared_key is last and its binders end it, so they
			// end the message too.
			ch.truncated = msg[:len(msg)-bindersLen]
		}
	}
	return ch, nil
}

// offersTLS13 reports whether supported_versions lists TLS 1.3.
func (ch *clientHello) offersTLS13() bool {
	for _, v := range ch.versions {
		if v == versionTLS13 {
			return true
		}
	}
	return false
}

// offersTLS12PSK reports whether the client lists a TLS 1.2 PSK cipher
// suite (RFC 4279, 5487, 5489, 6655, 7905, 8442 ranges).
func (ch *clientHello) offersTLS12PSK() bool {
	for _, id := range ch.suites {
		switch {
		case id >= 0x008a && id <= 0x0095, id >= 0x00a8 && id <= 0x00b9, id >= 0xc033 && id <= 0xc03b,
			id >= 0xc064 && id <= 0xc06b, id >= 0xc08e && id <= 0xc09b, id >= 0xc0a4 && id <= 0xc0ab,
			id >= 0xccab && id <= 0xccae, id >= 0xd001 && id <= 0xd005:
			return true
		}
	}
	return false
}

func (ch *clientHello) allowsMode(m byte) bool {
	for _, x := range ch.pskModes {
		if x == m {
			return true
		}
	}
	return false
}

// ourGroups are the (EC)DHE groups in the server's order of preference.
var ourGroups = []uint16{groupX25519, groupSecp256r1}

// pickShare is the first of our groups the client sent a share of.
func (ch *clientHello) pickShare() uint16 {
	for _, g := range ourGroups {
		if ch.share(g) != nil {
			return g
		}
	}
	return 0
}

// pickGroup is the first of our groups the client supports.
func (ch *clientHello) pickGroup() uint16 {
	for _, g := range ourGroups {
		if slices.Contains(ch.groups, g) {
			return g
		}
	}
	return 0
}

func (ch *clientHello) share(group uint16) []byte {
	for _, ks := range ch.shares {
		if ks.group == group {
			return ks.data
		}
	}
	return nil
}

// helloRetryRandom is the random of a HelloRetryRequest: SHA-256 of
// "HelloRetryRequest" (RFC 8446 §4.1.3).
var helloRetryRandom = []byte{
	0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
	0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
}

// msgMessageHash stands for the first ClientHello in the transcript
// after a HelloRetryRequest.
const msgMessageHash byte = 254

// serverHello builds a ServerHello: identity is the selected PSK (-1:
// none, a HelloRetryRequest), share our key share, or for a
// HelloRetryRequest retryGroup the group the client must send a share of.
func serverHello(random, sessionID []byte, suite uint16, identity int, share *keyShare, retryGroup uint16) []byte {
	var b cryptobyte.Builder
	b.AddUint8(msgServerHello)
	b.AddUint24LengthPrefixed(func(b *cryptobyte.Builder) {
		b.AddUint16(0x0303)
		b.AddBytes(random)
		b.AddUint8LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(sessionID) })
		b.AddUint16(suite)
		b.AddUint8(0)
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
			b.AddUint16(extSupportedVersions)
			b.AddUint16(2)
			b.AddUint16(versionTLS13)
			if identity >= 0 {
				b.AddUint16(extPreSharedKey)
				b.AddUint16(2)
				b.AddUint16(uint16(identity))
			}
			switch {
			case share != nil:
				b.AddUint16(extKeyShare)
				b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
					b.AddUint16(share.group)
					b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(share.data) })
				})
			case retryGroup != 0:
				b.AddUint16(extKeyShare)
				b.AddUint16(2)
				b.AddUint16(retryGroup)
			}
		})
	})
	return b.BytesOrPanic()
}

// handshakeMsg frames a handshake message body.
func handshakeMsg(typ byte, body []byte) []byte {
	m := make([]byte, 4, 4+len(body))
	m[0], m[1], m[2], m[3] = typ, byte(len(body)>>16), byte(len(body)>>8), byte(len(body))
	return append(m, body...)
}
