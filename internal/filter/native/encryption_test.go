package native

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/minio/sio"

	"github.com/facet-sds/facet/internal/filter"
)

func newEncryption(t testing.TB, keys filter.KeyProvider) filter.Filter {
	t.Helper()
	return newFilter(t, testRegistry(), "encryption", nil, filter.Env{Keys: keys})
}

func TestEncryptionRoundTrip(t *testing.T) {
	f := newEncryption(t, newTestKeys())
	sizes := []int{0, 1, darePayload - 1, darePayload, darePayload + 1, 3*darePayload + 17, 5<<20 + 3}
	for _, kind := range []string{"text", "random"} {
		for _, size := range sizes {
			t.Run(fmt.Sprintf("%s/%d", kind, size), func(t *testing.T) {
				plain := textData(uint64(size), size)
				if kind == "random" {
					plain = randData(uint64(size), size)
				}
				stored, rec := roundTrip(t, f, plain)
				if want, _ := sio.EncryptedSize(uint64(size)); uint64(len(stored)) != want {
					t.Fatalf("stored %d bytes, DARE says %d", len(stored), want)
				}
				if rec.Params["kid"] != "k1" || rec.Params["dare"] != "2.0" || rec.Params["cipher"] != "AES-256-GCM" ||
					rec.Params["plain"] != strconv.Itoa(size) {
					t.Fatalf("record %v", rec.Params)
				}
				// No plaintext on disk.
				if size >= 64 {
					for off := 0; off+32 <= size; off += size / 8 {
						if bytes.Contains(stored, plain[off:off+32]) {
							t.Fatalf("plaintext at %d appears in the stored stream", off)
						}
					}
				}
			})
		}
	}
}

// The record carries what undoes the transform and nothing that reveals
// the plaintext: the object key only sealed, under a key named by id.
func TestEncryptionRecordHoldsNoKey(t *testing.T) {
	keys := newTestKeys()
	f := newEncryption(t, keys)
	_, rec := encode(t, f, textData(1, 1000))
	dataKey, _ := keys.Key(context.Background(), "acme", "k1")
	for k, v := range rec.Params {
		raw, _ := base64.StdEncoding.DecodeString(v)
		if bytes.Contains([]byte(v), dataKey) || (len(raw) > 0 && bytes.Contains(raw, dataKey)) {
			t.Fatalf("record field %s holds the data key", k)
		}
	}
	sealed, _ := base64.StdEncoding.DecodeString(rec.Params["sealed"])
	if len(sealed) != 48 {
		t.Fatalf("sealed object key of %d bytes, want 32 + tag", len(sealed))
	}
}

func TestEncryptionRanges(t *testing.T) {
	f := newEncryption(t, newTestKeys())
	plain := textData(9, 20*darePayload+333)
	size := int64(len(plain))
	stored, rec := encode(t, f, plain)
	ms := newMemSource(stored)
	src := decode(t, f, rec, ms)
	checkRanges(t, src, ms, plain, rangesFor(11, size, darePayload), func(off, n, requested int64, opens int) {
		var want int64
		if n > 0 {
			first, last := off/darePayload, (off+n-1)/darePayload
			want = min((last+1)*darePackage, int64(len(stored))) - first*darePackage
		}
		if requested != want || opens > 1 {
			t.Fatalf("range [%d,+%d): %d bytes in %d opens, want %d in 1", off, n, requested, opens, want)
		}
		if bound := n + n/darePayload*dareOverhead + 2*darePackage; requested > bound {
			t.Fatalf("range [%d,+%d): read %d stored bytes, more than %d", off, n, requested, bound)
		}
	})
	for _, r := range [][2]int64{{-1, 1}, {0, size + 1}, {size, 1}} {
		if _, err := src.Open(context.Background(), r[0], r[1]); err == nil {
			t.Errorf("Open(%d, %d) accepted", r[0], r[1])
		}
	}
}

// Reads of every size, so that sio's direct-to-caller path (reads of 64
// KiB and more) and its buffered path both stop at the range's end.
func TestEncryptionReadSizes(t *testing.T) {
	f := newEncryption(t, newTestKeys())
	plain := randData(5, 6*darePayload+99)
	stored, rec := encode(t, f, plain)
	src := decode(t, f, rec, newMemSource(stored))
	for _, bufSize := range []int{1, 1000, darePayload - 1, darePayload, darePayload + 1, 3 * darePayload, 1 << 20} {
		for _, r := range [][2]int64{{0, int64(len(plain))}, {5, 2 * darePayload}, {darePayload, darePayload}, {100, 4*darePayload + 7}} {
			rc, err := src.Open(context.Background(), r[0], r[1])
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if _, err := io.CopyBuffer(&got, struct{ io.Reader }{rc}, make([]byte, bufSize)); err != nil {
				t.Fatalf("buf %d range %v: %v", bufSize, r, err)
			}
			rc.Close()
			if !bytes.Equal(got.Bytes(), plain[r[0]:r[0]+r[1]]) {
				t.Fatalf("buf %d range %v: wrong bytes", bufSize, r)
			}
		}
	}
}

func TestEncryptionTamperStream(t *testing.T) {
	f := newEncryption(t, newTestKeys())
	plain := textData(4, 5*darePayload+1234)
	size := int64(len(plain))
	stored, rec := encode(t, f, plain)
	last := int64(len(stored)) - 1
	positions := []int64{0, 1, 3, 4, 15, 16, 17, darePayload, darePackage - 1, darePackage, darePackage + 20,
		2*darePackage + 40000, 4*darePackage - 16, last - 16, last}
	for _, pos := range positions {
		bad := bytes.Clone(stored)
		bad[pos] ^= 0x01
		src := decode(t, f, rec, newMemSource(bad))
		if _, err := readRange(src, 0, size); !errors.Is(err, filter.ErrIntegrity) {
			t.Fatalf("byte %d flipped: full read err = %v, want ErrIntegrity", pos, err)
		}
		// A range over the altered package fails too; ranges elsewhere
		// do not need that package and are not affected.
		pkg := pos / darePackage
		off := pkg*darePayload + 10
		n := min(int64(100), size-off)
		if _, err := readRange(src, off, n); !errors.Is(err, filter.ErrIntegrity) {
			t.Fatalf("byte %d flipped: range over its package err = %v", pos, err)
		}
	}

	swapped := bytes.Clone(stored)
	copy(swapped[darePackage:2*darePackage], stored[2*darePackage:3*darePackage])
	copy(swapped[2*darePackage:3*darePackage], stored[darePackage:2*darePackage])
	if _, err := readRange(decode(t, f, rec, newMemSource(swapped)), 0, size); !errors.Is(err, filter.ErrIntegrity) {
		t.Fatalf("swapped packages: %v", err)
	}
	// A range starting at a package taken from elsewhere: its sequence
	// number does not match its place.
	if _, err := readRange(decode(t, f, rec, newMemSource(swapped)), darePayload, 10); !errors.Is(err, filter.ErrIntegrity) {
		t.Fatalf("swapped package read alone: %v", err)
	}

	// Cut at a package boundary, with the record edited to agree: the
	// plaintext size is sealed with the object key.
	cut := rec
	cut.Params = cloneParams(rec.Params)
	cut.Size = 3 * darePackage
	cut.Params["plain"] = strconv.Itoa(3 * darePayload)
	if _, err := f.(filter.Decoder).Decode(context.Background(), testReq, cut, newMemSource(stored[:cut.Size])); !errors.Is(err, filter.ErrIntegrity) {
		t.Fatalf("truncated stream: %v", err)
	}
	// A stream shorter than its record is refused at once.
	if _, err := f.(filter.Decoder).Decode(context.Background(), testReq, rec, newMemSource(stored[:len(stored)-1])); !errors.Is(err, filter.ErrIntegrity) {
		t.Fatalf("short source: %v", err)
	}
	// A source that returns less than it was asked.
	if _, err := readRange(decode(t, f, rec, shortSource{newMemSource(stored)}), 0, size); !errors.Is(err, filter.ErrIntegrity) {
		t.Fatalf("short reads: %v", err)
	}
}

func cloneParams(p map[string]string) map[string]string {
	c := make(map[string]string, len(p))
	for k, v := range p {
		c[k] = v
	}
	return c
}

func TestEncryptionTamperRecord(t *testing.T) {
	keys := newTestKeys()
	f := newEncryption(t, keys)
	plain := textData(6, 3*darePayload)
	stored, rec := encode(t, f, plain)
	flipB64 := func(s string) string {
		b, _ := base64.StdEncoding.DecodeString(s)
		b[len(b)/2] ^= 1
		return base64.StdEncoding.EncodeToString(b)
	}
	for name, mutate := range map[string]func(r *filter.Record){
		"sealed key":    func(r *filter.Record) { r.Params["sealed"] = flipB64(r.Params["sealed"]) },
		"nonce":         func(r *filter.Record) { r.Params["nonce"] = flipB64(r.Params["nonce"]) },
		"other key id":  func(r *filter.Record) { r.Params["kid"] = "k2" },
		"dare version":  func(r *filter.Record) { r.Params["dare"] = "1.0" },
		"cipher":        func(r *filter.Record) { r.Params["cipher"] = "CHACHA20-POLY1305" },
		"unknown field": func(r *filter.Record) { r.Params["key"] = "x" },
		"plain size":    func(r *filter.Record) { r.Params["plain"] = strconv.Itoa(len(plain) - 1) },
		"sealed size":   func(r *filter.Record) { r.Params["sealed"] = base64.StdEncoding.EncodeToString(make([]byte, 32)) },
		"no key id":     func(r *filter.Record) { delete(r.Params, "kid") },
		"filter":        func(r *filter.Record) { r.Filter = "compression" },
	} {
		r := rec
		r.Params = cloneParams(rec.Params)
		mutate(&r)
		if _, err := f.(filter.Decoder).Decode(context.Background(), testReq, r, newMemSource(stored)); !errors.Is(err, filter.ErrIntegrity) {
			t.Errorf("record %s altered: err = %v, want ErrIntegrity", name, err)
		}
	}
	// The sealed key is bound to its tenant.
	other := *testReq
	other.Tenant = "mallory"
	if _, err := f.(filter.Decoder).Decode(context.Background(), &other, rec, newMemSource(stored)); !errors.Is(err, filter.ErrIntegrity) {
		t.Errorf("another tenant: err = %v, want ErrIntegrity", err)
	}
	// Same key id, different key (a wrong master key): never wrong data.
	keys.setSecret("s2")
	if _, err := f.(filter.Decoder).Decode(context.Background(), testReq, rec, newMemSource(stored)); !errors.Is(err, filter.ErrIntegrity) {
		t.Errorf("wrong key: err = %v, want ErrIntegrity", err)
	}
}

func TestEncryptionKeyIDs(t *testing.T) {
	keys := newTestKeys()
	f := newEncryption(t, keys)
	plainA, plainB := textData(1, 5000), textData(2, 7000)
	storedA, recA := encode(t, f, plainA)
	keys.rotate("acme", "k2")
	storedB, recB := encode(t, f, plainB)
	if recA.Params["kid"] != "k1" || recB.Params["kid"] != "k2" {
		t.Fatalf("key ids %q, %q; want k1, k2", recA.Params["kid"], recB.Params["kid"])
	}
	// Both stay readable after rotation: each names its own key.
	for _, c := range []struct {
		stored, plain []byte
		rec           filter.Record
	}{{storedA, plainA, recA}, {storedB, plainB, recB}} {
		got, err := readRange(decode(t, f, c.rec, newMemSource(c.stored)), 0, int64(len(c.plain)))
		if err != nil || !bytes.Equal(got, c.plain) {
			t.Fatalf("key %s after rotation: %v", c.rec.Params["kid"], err)
		}
	}
	// A key id the provider does not know fails with its error.
	r := recA
	r.Params = cloneParams(recA.Params)
	r.Params["kid"] = "zz"
	_, err := f.(filter.Decoder).Decode(context.Background(), testReq, r, newMemSource(storedA))
	if err == nil || !strings.Contains(err.Error(), `has no key "zz"`) {
		t.Fatalf("unknown key id: %v", err)
	}
}

// The data plane may ask for a record more than once; the object key is
// sealed once and the answer stays the same.
func TestEncryptionRecordTwice(t *testing.T) {
	f := newEncryption(t, newTestKeys())
	plain := textData(1, 3000)
	r, rec, err := f.(filter.Encoder).Encode(context.Background(), testReq, bytes.NewReader(plain))
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := io.ReadAll(r)
	first, err1 := rec()
	second, err2 := rec()
	if err1 != nil || err2 != nil || first.Params["sealed"] != second.Params["sealed"] {
		t.Fatalf("records differ: %v, %v", err1, err2)
	}
	got, err := readRange(decode(t, f, second, newMemSource(stored)), 0, int64(len(plain)))
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("second record does not decode: %v", err)
	}
}

func TestEncryptionSourceErrors(t *testing.T) {
	f := newEncryption(t, newTestKeys())
	plain := textData(3, 4*darePayload)
	stored, rec := encode(t, f, plain)
	boom := errors.New("backend connection reset")
	for _, after := range []int64{0, 10, darePackage + 5} {
		_, err := readRange(decode(t, f, rec, failingSource{newMemSource(stored), after, boom}), 0, int64(len(plain)))
		if !errors.Is(err, boom) || errors.Is(err, filter.ErrIntegrity) {
			t.Fatalf("source failing after %d bytes: %v, want the source's error", after, err)
		}
	}
}

func TestEncryptionNew(t *testing.T) {
	in, _ := testRegistry().Lookup("encryption")
	if _, err := in.New(nil, filter.Env{}); err == nil || err.Error() != "encryption: the server has no key provider" {
		t.Errorf("New without keys: %v", err)
	}
	if _, err := in.New(filter.Params{"cipher": "aes"}, filter.Env{Keys: newTestKeys()}); err == nil ||
		err.Error() != `encryption: unknown parameter "cipher" (it takes none)` {
		t.Errorf("New with a parameter: %v", err)
	}
	f := newEncryption(t, newTestKeys())
	if _, _, err := f.(filter.Encoder).Encode(context.Background(), &filter.Request{}, bytes.NewReader(nil)); err == nil {
		t.Error("Encode without a tenant accepted")
	}
}

// BenchmarkEncryption measures the filter against AES-GCM sealing the
// same 64 KiB packages by hand.
func BenchmarkEncryption(b *testing.B) {
	plain := randData(1, 32<<20)
	f := newEncryption(b, newTestKeys())
	buf := make([]byte, 1<<20)
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		for b.Loop() {
			r, _, err := f.(filter.Encoder).Encode(context.Background(), testReq, bytes.NewReader(plain))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	stored, rec := encode(b, f, plain)
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		src := decode(b, f, rec, newMemSource(stored))
		for b.Loop() {
			rc, err := src.Open(context.Background(), 0, src.Size())
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{rc}, buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("aes-gcm-raw", func(b *testing.B) {
		block, _ := aes.NewCipher(make([]byte, 32))
		aead, _ := cipher.NewGCM(block)
		nonce := make([]byte, 12)
		out := make([]byte, darePackage)
		b.SetBytes(int64(len(plain)))
		for b.Loop() {
			for off := 0; off < len(plain); off += darePayload {
				aead.Seal(out[:0], nonce, plain[off:off+darePayload], nil)
			}
		}
	})
}
