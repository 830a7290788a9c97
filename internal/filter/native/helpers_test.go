package native

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/facet-sds/facet/internal/filter"
)

// memSource is a stored stream in memory that counts what is asked of it.
type memSource struct {
	b []byte

	mu        sync.Mutex
	requested int64 // bytes asked for through Open
	opens     int
}

func newMemSource(b []byte) *memSource { return &memSource{b: b} }

func (m *memSource) Size() int64 { return int64(len(m.b)) }

func (m *memSource) Open(_ context.Context, off, n int64) (io.ReadCloser, error) {
	if err := filter.CheckRange(int64(len(m.b)), off, n); err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.requested += n
	m.opens++
	m.mu.Unlock()
	return io.NopCloser(bytes.NewReader(m.b[off : off+n])), nil
}

func (m *memSource) reset() (requested int64, opens int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	requested, opens = m.requested, m.opens
	m.requested, m.opens = 0, 0
	return requested, opens
}

// countingSource wraps a Source to count what is asked of it, for
// sources that are themselves decoded views.
type countingSource struct {
	filter.Source
	mu        sync.Mutex
	requested int64
}

func (c *countingSource) Open(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	c.mu.Lock()
	c.requested += n
	c.mu.Unlock()
	return c.Source.Open(ctx, off, n)
}

func (c *countingSource) reset() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.requested
	c.requested = 0
	return r
}

// vocabulary for text-like data: what logs and documents compress like.
var vocabulary = []string{
	"the", "of", "and", "to", "in", "is", "for", "that", "with", "on", "as", "request",
	"tenant", "bucket", "object", "storage", "policy", "filter", "compression", "error",
	"latency", "GET", "PUT", "status", "user", "session", "timestamp", "info", "warn",
	"gateway", "stage", "range", "bytes", "key", "value", "node", "disk", "cache",
}

// textData returns n bytes of text: words from a small vocabulary mixed
// with numbers, broken into lines. It compresses about 3-5x, like logs.
func textData(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	b := make([]byte, 0, n+64)
	for len(b) < n {
		switch x := r.IntN(16); {
		case x < 11:
			b = append(b, vocabulary[r.IntN(len(vocabulary))]...)
		case x < 15:
			b = strconv.AppendInt(b, int64(r.IntN(100000)), 10)
		default:
			b = append(b, '\n')
			continue
		}
		b = append(b, ' ')
	}
	return b[:n]
}

func randData(seed uint64, n int) []byte {
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	b := make([]byte, n)
	r.Read(b)
	return b
}

// testKeys derives keys from the tenant and id; it knows only the ids it
// was told about, as a real provider knows only ids it can derive.
type testKeys struct {
	mu      sync.Mutex
	current map[string]string
	secret  string
}

func newTestKeys() *testKeys {
	return &testKeys{current: map[string]string{}, secret: "s1"}
}

func (k *testKeys) CurrentKey(_ context.Context, tenant string) (string, []byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	id := k.current[tenant]
	if id == "" {
		id = "k1"
	}
	return id, k.derive(tenant, id), nil
}

func (k *testKeys) Key(_ context.Context, tenant, id string) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(id) < 2 || id[0] != 'k' {
		return nil, fmt.Errorf("tenant %q has no key %q", tenant, id)
	}
	return k.derive(tenant, id), nil
}

func (k *testKeys) derive(tenant, id string) []byte {
	s := sha256.Sum256([]byte(k.secret + "\x00" + tenant + "\x00" + id))
	return s[:]
}

func (k *testKeys) rotate(tenant, id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.current[tenant] = id
}

func (k *testKeys) setSecret(s string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.secret = s
}

// newFilter builds a registered filter by name.
func newFilter(t testing.TB, reg *filter.Registry, name string, p filter.Params, env filter.Env) filter.Filter {
	t.Helper()
	in, ok := reg.Lookup(name)
	if !ok {
		t.Fatalf("filter %q not registered", name)
	}
	f, err := in.New(p, env)
	if err != nil {
		t.Fatalf("New(%s, %v): %v", name, p, err)
	}
	return f
}

var testReq = &filter.Request{Tenant: "acme", Bucket: "b", Key: "k", Method: filter.MethodPut, Size: -1}

// encode runs an encoder over plain with reads of odd sizes, and returns
// the stored bytes and the record.
func encode(t testing.TB, f filter.Filter, plain []byte) ([]byte, filter.Record) {
	t.Helper()
	enc := f.(filter.Encoder)
	r, rec, err := enc.Encode(context.Background(), testReq, bytes.NewReader(plain))
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if _, err := rec(); err == nil && len(plain) > 0 {
		t.Fatal("record available before EOF")
	}
	var out bytes.Buffer
	buf := make([]byte, 7919) // a prime: reads straddle every boundary
	if _, err := io.CopyBuffer(&out, struct{ io.Reader }{r}, buf); err != nil {
		t.Fatalf("encoded stream: %v", err)
	}
	got, err := rec()
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	if got.Size != int64(out.Len()) {
		t.Fatalf("record says %d bytes, stream had %d", got.Size, out.Len())
	}
	return out.Bytes(), got
}

func decode(t testing.TB, f filter.Filter, rec filter.Record, src filter.Source) filter.Source {
	t.Helper()
	s, err := f.(filter.Decoder).Decode(context.Background(), testReq, rec, src)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return s
}

// roundTrip encodes plain, decodes the whole stream and checks it reads
// back unchanged.
func roundTrip(t testing.TB, f filter.Filter, plain []byte) ([]byte, filter.Record) {
	t.Helper()
	stored, rec := encode(t, f, plain)
	src := decode(t, f, rec, newMemSource(stored))
	if src.Size() != int64(len(plain)) {
		t.Fatalf("decoded size %d, want %d", src.Size(), len(plain))
	}
	got, err := readRange(src, 0, int64(len(plain)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, plain) {
		t.Fatal("round trip changed the data")
	}
	return stored, rec
}

// checkRanges reads every range of src, through Read and through io.Copy
// (WriteTo where the reader has it), and compares it with plain. stored
// is the stored stream under src: after is called with what the Read
// pass of each range asked of it.
func checkRanges(t testing.TB, src filter.Source, stored *memSource, plain []byte, ranges [][2]int64, after func(off, n, requested int64, opens int)) {
	t.Helper()
	for _, r := range ranges {
		off, n := r[0], r[1]
		stored.reset()
		got, err := readRange(src, off, n)
		if err != nil {
			t.Fatalf("range [%d,+%d): %v", off, n, err)
		}
		if !bytes.Equal(got, plain[off:off+n]) {
			t.Fatalf("range [%d,+%d): wrong bytes", off, n)
		}
		requested, opens := stored.reset()
		after(off, n, requested, opens)
		rc, err := src.Open(context.Background(), off, n)
		if err != nil {
			t.Fatal(err)
		}
		var copied bytes.Buffer
		if m, err := io.Copy(&copied, rc); err != nil || m != n || !bytes.Equal(copied.Bytes(), plain[off:off+n]) {
			t.Fatalf("range [%d,+%d) through io.Copy: %d bytes, %v", off, n, m, err)
		}
		rc.Close()
	}
}

// readRange reads [off, off+n) of s completely.
func readRange(s filter.Source, off, n int64) ([]byte, error) {
	rc, err := s.Open(context.Background(), off, n)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// rangesFor returns (off, n) pairs covering edges and random spots of a
// stream of size bytes with the given unit (frame or package).
func rangesFor(seed uint64, size, unit int64) [][2]int64 {
	rs := [][2]int64{{0, 0}, {0, size}, {size, 0}}
	if size == 0 {
		return rs
	}
	rs = append(rs, [2]int64{0, 1}, [2]int64{size - 1, 1}, [2]int64{size / 2, size - size/2})
	for b := unit; b < size; b += unit {
		for _, d := range []int64{-1, 0} {
			if b+d >= 0 {
				rs = append(rs, [2]int64{b + d, min(2, size-b-d)}, [2]int64{b + d, min(unit, size-b-d)})
			}
		}
		if b > 4*unit {
			break
		}
	}
	r := rand.New(rand.NewPCG(seed, 1))
	for range 40 {
		off := r.Int64N(size)
		n := r.Int64N(min(size-off, 3*unit)) + 1
		rs = append(rs, [2]int64{off, n})
	}
	return rs
}

// testRegistry holds fresh native filters, as the builtin list does.
func testRegistry() *filter.Registry {
	return filter.NewRegistry(NoopInfo(), CompressionInfo(), EncryptionInfo(), CachingInfo(),
		TaggingInfo(), MetadataGuardInfo(), RecycleBinInfo())
}
