package block

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/facet-sds/facet/internal/block/bfilter"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/meta"
)

// testVolume opens a volume of size bytes striped over width pools in
// temporary directories, with the given stack.
func testVolume(t *testing.T, size int64, width int, stack ...string) *device {
	t.Helper()
	pools := map[string]meta.Pool{}
	rec := meta.Volume{Name: "v", ID: "0123", Tenant: "acme", Size: size}
	for i := range width {
		name := string(rune('a' + i))
		pools[name] = meta.Pool{Name: name, Dir: t.TempDir(), Usage: ClassRandom}
		rec.Extents = append(rec.Extents, meta.Extent{Pool: name, Capacity: share(rec, width).cap})
	}
	g := newGate(4)
	v := &volume{rec: rec, flows: map[*gate]*flow{}, stats: &volumeStats{}, rmw: &sync.Mutex{},
		readBW: newBucket(0, 0, DefaultBurstWindow), writeBW: newBucket(0, 0, DefaultBurstWindow), readOps: newBucket(0, 0, DefaultBurstWindow), writeOps: newBucket(0, 0, DefaultBurstWindow)}
	back, err := openBacking(rec, pools, func(string) flowGate { return flowGate{g: g, f: &flow{weight: 1}, cost: costOf(ClassRandom)} }, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { back.close() })
	v.back = back
	reg := bfilter.NewRegistry(bfilter.Builtin()...)
	st := &bfilter.Stack{Align: 1}
	key := make([]byte, 64)
	rand.Read(key)
	for _, name := range stack {
		in, _ := reg.Lookup(name)
		f, err := in.New(filter.Params{"key": "0x55"}, bfilter.Env{Volume: "v", Key: func() ([]byte, error) { return key, nil }})
		if err != nil {
			t.Fatal(err)
		}
		st.Add(name, f, in.Align)
	}
	v.stack.Store(st)
	return &device{v: v, close: func() {}}
}

func TestVolumeRoundTrips(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		width int
		stack []string
	}{
		{"plain", 1, nil},
		{"striped", 3, nil},
		{"nop-xor-bitrev", 1, []string{"nop", "xor", "bitrev"}},
		{"encryption-striped", 2, []string{"encryption"}},
		{"xor-encryption", 1, []string{"xor", "encryption"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const size = 8 << 20
			d := testVolume(t, size, tc.width, tc.stack...)
			model := make([]byte, size)
			// Aligned, unaligned and stripe-crossing writes.
			for _, w := range []struct{ off, n int64 }{{0, 4096}, {3, 5}, {StripeUnit - 100, 300}, {511, 1026}, {2*StripeUnit + 7, 3 * StripeUnit}, {size - 512, 512}} {
				b := make([]byte, w.n)
				rand.Read(b)
				copy(model[w.off:], b)
				if err := d.WriteAt(ctx, append([]byte(nil), b...), w.off, w.off%2 == 0); err != nil {
					t.Fatalf("write %d+%d: %v", w.off, w.n, err)
				}
			}
			if err := d.WriteZeroes(ctx, 100, 1000, false, false); err != nil {
				t.Fatal(err)
			}
			clear(model[100:1100])
			// NO_HOLE, over written data and over the untouched range
			// from 5 MiB + 100 on (across stripe boundaries): zeros that
			// are allocated afterwards.
			before := allocated(t, d)
			if err := d.WriteZeroes(ctx, 4*StripeUnit-5000, 3*StripeUnit+12345, false, true); err != nil {
				t.Fatal(err)
			}
			clear(model[4*StripeUnit-5000 : 7*StripeUnit+7345])
			if grew := allocated(t, d) - before; grew < 2*StripeUnit-2*fsBlock {
				t.Errorf("NO_HOLE zeroes allocated %d bytes over the 2 MiB that were holes", grew)
			}
			for _, r := range []struct{ off, n int64 }{{0, size}, {3, 5}, {StripeUnit - 1, 2}, {777, 4096}} {
				got := make([]byte, r.n)
				if err := d.ReadAt(ctx, got, r.off); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, model[r.off:r.off+r.n]) {
					t.Fatalf("read %d+%d differs from what was written", r.off, r.n)
				}
			}
			if err := d.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if len(tc.stack) > 0 {
				raw := make([]byte, 4096)
				if err := d.v.readRaw(ctx, raw, 0); err != nil {
					t.Fatal(err)
				}
				if bytes.Equal(raw, model[:4096]) {
					t.Fatal("the stack left the backing bytes unchanged")
				}
			}
		})
	}
}

// allocated is how many bytes the volume's member files have allocated.
func allocated(t *testing.T, d *device) int64 {
	t.Helper()
	var n int64
	for _, f := range d.v.back.files {
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		n += st.Blocks * 512
	}
	return n
}

// TestWritePieces: a write larger than writeMax reaches the file whole,
// in pieces of at most writeMax, at any offset.
func TestWritePieces(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "m.img"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := make([]byte, 2*writeMax+12345)
	rand.Read(p)
	n, err := writePieces(f, p, 7)
	if err != nil || n != len(p) {
		t.Fatalf("writePieces: %d, %v; want %d", n, err, len(p))
	}
	got := make([]byte, len(p))
	if _, err := f.ReadAt(got, 7); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, p) {
		t.Fatal("file differs from what was written")
	}
	// A failing piece reports what the pieces before it wrote.
	ro, err := os.Open(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if n, err := writePieces(ro, p, 0); err == nil || n != 0 {
		t.Fatalf("write to a read-only file: %d, %v", n, err)
	}
}
