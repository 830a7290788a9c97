package bfilter

import (
	"bytes"
	"crypto/aes"
	"crypto/rand"
	"math/bits"
	"testing"

	"golang.org/x/crypto/xts"

	"github.com/facet-sds/facet/internal/filter"
)

func build(t *testing.T, name string, p filter.Params) Filter {
	t.Helper()
	in, ok := NewRegistry(Builtin()...).Lookup(name)
	if !ok {
		t.Fatalf("%s not registered", name)
	}
	key := bytes.Repeat([]byte{7}, 32)
	key = append(key, bytes.Repeat([]byte{9}, 32)...)
	f, err := in.New(p, Env{Volume: "v", Key: func() ([]byte, error) { return key, nil }})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFiltersRoundTrip(t *testing.T) {
	for _, name := range []string{"nop", "xor", "bitrev", "encryption"} {
		f := build(t, name, filter.Params{"key": "0x55"})
		clear := make([]byte, 4096)
		rand.Read(clear)
		b := bytes.Clone(clear)
		if err := f.Encode(8192, b); err != nil {
			t.Fatal(err)
		}
		if (name == "nop") != bytes.Equal(b, clear) {
			t.Errorf("%s: encode changed the data: %v", name, !bytes.Equal(b, clear))
		}
		if err := f.Decode(8192, b); err != nil || !bytes.Equal(b, clear) {
			t.Errorf("%s: decode does not undo encode (%v)", name, err)
		}
	}
}

func TestFilterOutputs(t *testing.T) {
	b := []byte{0x00, 0x01, 0xff, 0x80, 0x12, 0x34, 0x56, 0x78, 0x9a}
	x := bytes.Clone(b)
	build(t, "xor", filter.Params{"key": "0x55"}).Encode(0, x)
	for i := range b {
		if x[i] != b[i]^0x55 {
			t.Fatalf("xor: %x", x)
		}
	}
	r := bytes.Clone(b)
	build(t, "bitrev", nil).Encode(0, r)
	for i := range b {
		if r[i] != bits.Reverse8(b[i]) {
			t.Fatalf("bitrev: %x", r)
		}
	}
	// XTS: the same plaintext in two sectors encrypts differently, and
	// unaligned ranges are refused (the volume aligns them).
	e := build(t, "encryption", nil)
	s := make([]byte, 1024)
	e.Encode(0, s)
	if bytes.Equal(s[:512], s[512:]) {
		t.Fatal("two sectors share a tweak")
	}
	if err := e.Encode(3, make([]byte, 512)); err == nil {
		t.Fatal("unaligned encrypt accepted")
	}
	for _, bad := range []string{"0x100", "256", "zz", "-1"} {
		in, _ := NewRegistry(Builtin()...).Lookup("xor")
		if err := in.Validate(filter.Params{"key": bad}); err == nil {
			t.Errorf("xor key %q accepted", bad)
		}
	}
	if _, err := encryptionInfo().New(nil, Env{}); err == nil {
		t.Fatal("encryption without a key source")
	}
}

func TestStackOrder(t *testing.T) {
	st := &Stack{}
	st.Add("xor", build(t, "xor", filter.Params{"key": "0x55"}), 1)
	st.Add("bitrev", build(t, "bitrev", nil), 1)
	st.Add("encryption", build(t, "encryption", nil), 512)
	if st.Align != 512 {
		t.Fatalf("align %d", st.Align)
	}
	b := []byte{0x01}
	s2 := &Stack{}
	s2.Add("xor", build(t, "xor", filter.Params{"key": "0x55"}), 1)
	s2.Add("bitrev", build(t, "bitrev", nil), 1)
	s2.Encode(0, b)
	if b[0] != bits.Reverse8(0x01^0x55) {
		t.Fatalf("declared order not kept on write: %#x", b[0])
	}
	s2.Decode(0, b)
	if b[0] != 0x01 {
		t.Fatalf("reverse order not kept on read: %#x", b[0])
	}
}

// TestXTSMatchesOracle checks the XTS loop against golang.org/x/crypto/xts.
func TestXTSMatchesOracle(t *testing.T) {
	key := make([]byte, 64)
	rand.Read(key)
	mine, err := newXTS(key)
	if err != nil {
		t.Fatal(err)
	}
	oracle, err := xts.NewCipher(aes.NewCipher, key)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{512, 4096, 1 << 20} {
		plain := make([]byte, n)
		rand.Read(plain)
		const off = 7 * 512
		got := bytes.Clone(plain)
		mine.Encode(off, got)
		want := make([]byte, n)
		for i := 0; i < n; i += 512 {
			oracle.Encrypt(want[i:i+512], plain[i:i+512], uint64(off+i)/512)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: ciphertext differs from x/crypto/xts", n)
		}
		mine.Decode(off, got)
		if !bytes.Equal(got, plain) {
			t.Fatalf("%d bytes: decrypt does not undo encrypt", n)
		}
	}
}
