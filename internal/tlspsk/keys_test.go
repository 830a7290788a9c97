package tlspsk

import (
	"bytes"
	"crypto/ecdh"
	"encoding/hex"
	"testing"
)

// The "Resumed 0-RTT Handshake" of RFC 8448 §4: a PSK handshake with an
// x25519 key share, the trace that exercises every step of the PSK key
// schedule (its binder label is "res binder"; ours, "ext binder", differs
// only in that string).
const (
	rfcPSK          = "4ecd0eb6ec3b4d87f5d6028f922ca4c5851a277fd41311c9e62d2c9492e1c4f3"
	rfcEarly        = "9b2188e9b2fc6d64d71dc329900e20bb41915000f678aa839cbb797cb7d8332c"
	rfcHelloPrefix  = "010001fc03031bc3ceb6bbe39cff938355b5a50adb6db21b7a6af649d7b4bc419d7876487d95000006130113031302010001cd0000000b0009000006736572766572ff01000100000a00140012001d00170018001901000101010201030104003300260024001d0020e4ffb68ac05f8d96c99da26698346c6be16482badddafe051a66b4f18d668f0b002a0000002b0003020304000d0020001e040305030603020308040805080604010501060102010402050206020202002d00020101001c0002400100150057000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000002900dd00b800b22c035d829359ee5ff7af4ec900000000262a6494dc486d2c8a34cb33fa90bf1b0070ad3c498883c9367c09a2be785abc55cd226097a3a982117283f82a03a143efd3ff5dd36d64e861be7fd61d2827db279cce145077d454a3664d4e6da4d29ee03725a6a4dafcd0fc67d2aea70529513e3da2677fa5906c5b3f7d8f92f228bda40dda721470f9fbf297b5aea617646fac5c03272e970727c621a79141ef5f7de6505e5bfbc388e93343694093934ae4d357fad6aacb"
	rfcBinder       = "3add4fb2d8fdf822a0ca3cf7678ef5e88dae990141c5924d57bb6fa31b9e5f9d"
	rfcServerPriv   = "de5b4476e7b490b2652d338acbf2948066f255f9440e23b98fc69835298dc107"
	rfcClientPub    = "e4ffb68ac05f8d96c99da26698346c6be16482badddafe051a66b4f18d668f0b"
	rfcShared       = "f44194756ff9ec9d25180635d66ea6824c6ab3bf179977be37f723570e7ccb2e"
	rfcServerHello  = "0200005c03033ccfd2dec890222763472ae8136777c9d7358777bb66e91ea5122495f559ea2d00130100003400290002000000330024001d0020121761ee42c333e1b9e77b60dd57c2053cd94512ab47f115e86eff50942cea31002b00020304"
	rfcHandshake    = "005cb112fd8eb4ccc623bb88a07c64b3ede1605363fc7d0df8c7ce4ff0fb4ae6"
	rfcClientHS     = "2faac08f851d35fea3604fcb4de82dc62c9b164a70974d0462e27f1ab278700f"
	rfcServerHS     = "fe927ae271312e8bf0275b581c54eef020450dc4ecffaa05a1a35d27518e7803"
	rfcMaster       = "e2d32d4ed66dd37897a0e80c84107503ce58bf8aad4cb55a5002d77ecb890ece"
	rfcServerHSKey  = "27c6bdc0a3dcea39a47326d79bc9e4ee"
	rfcServerHSIV   = "9569ecdd4d0536705e9ef725"
	rfcEncExts      = "080000280026000a00140012001d00170018001901000101010201030104001c0002400100000000002a0000"
	rfcServerFin    = "48d3e0e1b3d907c6acff145e16090388c77b05c050b634ab1a88bbd0dd1a34b2"
	rfcClientApp    = "2abbf2b8e381d23dbebe1dd2a7d16a8bf484cb4950d23fb7fb7fa8547062d9a1"
	rfcServerApp    = "cc21f1bf8feb7dd5fa505bd9c4b468a9984d554a993dc49e6d285598fb672691"
	rfcServerAppKey = "e857c690a34c5a9129d833619684f95e"
	rfcServerAppIV  = "0685d6b561aab9ef1013faf9"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func same(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	if hex.EncodeToString(got) != want {
		t.Errorf("%s:\n got %x\nwant %s", what, got, want)
	}
}

// rfcClientHello is the trace's whole ClientHello: the prefix, then the
// binders list with its one binder.
func rfcClientHello(t testing.TB) []byte {
	return append(unhex(t, rfcHelloPrefix), append([]byte{0, 33, 32}, unhex(t, rfcBinder)...)...)
}

func TestKeyScheduleRFC8448(t *testing.T) {
	s := newSchedule(unhex(t, rfcPSK))
	same(t, "early secret", s.early, rfcEarly)

	ch, err := parseClientHello(rfcClientHello(t))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ch.truncated, unhex(t, rfcHelloPrefix)) {
		t.Fatalf("truncated ClientHello is not the trace's prefix")
	}
	if len(ch.identities) != 1 || len(ch.binders) != 1 || ch.identities[0].age != 0xfad6aacb || !ch.earlyData ||
		!ch.offersTLS13() || !ch.allowsMode(modePSKDHE) || ch.allowsMode(modePSK) || !bytes.Equal(ch.share(groupX25519), unhex(t, rfcClientPub)) {
		t.Fatalf("parsed ClientHello: %+v", ch)
	}
	same(t, "binder", s.binder(labelResBinder, sumOf(ch.truncated)), rfcBinder)
	if bytes.Equal(s.binder(labelExtBinder, sumOf(ch.truncated)), ch.binders[0]) {
		t.Error("the external binder label gives the resumption binder")
	}

	priv, err := ecdh.X25519().NewPrivateKey(unhex(t, rfcServerPriv))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ecdh.X25519().NewPublicKey(ch.share(groupX25519))
	if err != nil {
		t.Fatal(err)
	}
	shared, err := priv.ECDH(pub)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "shared secret", shared, rfcShared)
	s.setShared(shared)
	same(t, "handshake secret", s.handshake, rfcHandshake)
	same(t, "master secret", s.master, rfcMaster)

	th := newHash()
	th.Write(ch.raw)
	th.Write(unhex(t, rfcServerHello))
	clientHS, serverHS := s.handshakeSecrets(th.Sum(nil))
	same(t, "c hs traffic", clientHS, rfcClientHS)
	same(t, "s hs traffic", serverHS, rfcServerHS)
	var hc halfConn
	if err := hc.setSecret(&suites[0], serverHS); err != nil {
		t.Fatal(err)
	}
	same(t, "server handshake iv", hc.iv[:], rfcServerHSIV)
	same(t, "server handshake key", expandLabel(serverHS, "key", nil, 16), rfcServerHSKey)

	th.Write(unhex(t, rfcEncExts))
	same(t, "server Finished", finishedMAC(serverHS, th.Sum(nil)), rfcServerFin)
	th.Write(append([]byte{msgFinished, 0, 0, 32}, unhex(t, rfcServerFin)...))
	clientApp, serverApp := s.appSecrets(th.Sum(nil))
	same(t, "c ap traffic", clientApp, rfcClientApp)
	same(t, "s ap traffic", serverApp, rfcServerApp)
	if err := hc.setSecret(&suites[0], serverApp); err != nil {
		t.Fatal(err)
	}
	same(t, "server application iv", hc.iv[:], rfcServerAppIV)
	same(t, "server application key", expandLabel(serverApp, "key", nil, 16), rfcServerAppKey)
}

// TestParseServerHelloOfTrace checks the ServerHello builder against the
// trace's: same random, suite, selected identity and share give the same
// bytes.
func TestServerHelloRFC8448(t *testing.T) {
	want := unhex(t, rfcServerHello)
	random := want[6 : 6+32]
	share := &keyShare{group: groupX25519, data: unhex(t, "121761ee42c333e1b9e77b60dd57c2053cd94512ab47f115e86eff50942cea31")}
	got := serverHello(random, nil, TLS_AES_128_GCM_SHA256, 0, share, 0)
	// The trace orders extensions pre_shared_key, key_share,
	// supported_versions; ours puts supported_versions first. Compare
	// everything but the extension order.
	if len(got) != len(want) || !bytes.Equal(got[:40], want[:40]) {
		t.Fatalf("ServerHello:\n got %x\nwant %x", got, want)
	}
	for _, ext := range [][]byte{unhex(t, "00290002000000"), unhex(t, "002b00020304"), unhex(t, "003300240"+"01d0020121761ee42c333e1b9e77b60dd57c2053cd94512ab47f115e86eff50942cea31")} {
		if !bytes.Contains(got, ext) {
			t.Errorf("ServerHello lacks extension %x", ext)
		}
	}
}
