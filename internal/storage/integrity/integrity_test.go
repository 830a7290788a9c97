package integrity

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/facet-sds/facet/internal/storage"
	fsstore "github.com/facet-sds/facet/internal/storage/fs"
)

// counted records mismatches reported.
type counted struct{ n int }

func (c *counted) IntegrityFailed(context.Context, string, string, error) { c.n++ }

func newBackend(t *testing.T) (*Backend, storage.Backend, string, *counted) {
	t.Helper()
	dir := t.TempDir()
	raw, err := fsstore.Open(context.Background(), dir, fsstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	if err := raw.CreateBucket(context.Background(), "b"); err != nil {
		t.Fatal(err)
	}
	c := &counted{}
	return Wrap(raw, Options{Failures: c}), raw, dir, c
}

func randBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func put(t *testing.T, b storage.Backend, key string, body []byte) storage.ObjectInfo {
	t.Helper()
	info, err := b.PutObject(context.Background(), "b", key, storage.PutInput{Body: bytes.NewReader(body),
		Seal: func(m *storage.ObjectMeta) error { m.Size, m.ETag = int64(len(body)), key; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// get reads bucket b's key over rng and returns what arrived and how it
// ended.
func get(b storage.Backend, key string, rng *storage.Range) ([]byte, error) {
	rc, _, err := b.GetObject(context.Background(), "b", key, rng)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var out bytes.Buffer
	_, err = io.Copy(&out, rc)
	return out.Bytes(), err
}

// flip flips the byte at off of want in the one data file that holds
// want.
func flip(t *testing.T, dir string, want []byte, off int64) {
	t.Helper()
	found := 0
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		i := bytes.Index(b, want)
		if err != nil || i < 0 {
			return err
		}
		b[int64(i)+off] ^= 0x01
		found++
		return os.WriteFile(path, b, 0o640)
	})
	if found != 1 {
		t.Fatalf("%d data files hold the object", found)
	}
}

func TestSumsRoundTripAndRanges(t *testing.T) {
	b, _, _, _ := newBackend(t)
	for _, n := range []int{0, 1, BlockSize - 1, BlockSize, BlockSize + 1, 3*BlockSize + 777} {
		body := randBytes(n, uint64(n))
		key := "k" + string(rune('a'+n%26))
		info := put(t, b, key, body)
		s, err := Of(info.Meta.System)
		if err != nil || s == nil || s.Size() != int64(n) {
			t.Fatalf("n=%d: sums %+v, %v", n, s, err)
		}
		got, err := get(b, key, nil)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("n=%d: whole GET: %d bytes, %v", n, len(got), err)
		}
		for _, r := range [][2]int{{0, 1}, {n / 2, n / 3}, {BlockSize - 5, 10}, {n - 1, 1}, {1, n + 100}} {
			if r[0] < 0 || r[0] >= n || r[1] <= 0 {
				continue
			}
			got, err := get(b, key, &storage.Range{Start: int64(r[0]), Length: int64(r[1])})
			end := min(n, r[0]+r[1])
			if err != nil || !bytes.Equal(got, body[r[0]:end]) {
				t.Fatalf("n=%d range %v: %d bytes, %v", n, r, len(got), err)
			}
		}
	}
}

func TestFlippedByteIsNeverServed(t *testing.T) {
	b, _, dir, c := newBackend(t)
	body := randBytes(4*BlockSize, 7)
	put(t, b, "obj", body)
	bad := int64(2*BlockSize + 100)
	flip(t, dir, body, bad)

	got, err := get(b, "obj", nil)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("whole GET ended with %v, want ErrCorrupt", err)
	}
	if len(got) != 2*BlockSize || !bytes.Equal(got, body[:len(got)]) {
		t.Fatalf("whole GET served %d bytes before the damaged block, want the %d good ones", len(got), 2*BlockSize)
	}
	if _, err := get(b, "obj", &storage.Range{Start: bad - 10, Length: 20}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("range over the damaged block: %v", err)
	}
	got, err = get(b, "obj", &storage.Range{Start: BlockSize + 3, Length: 1000})
	if err != nil || !bytes.Equal(got, body[BlockSize+3:BlockSize+1003]) {
		t.Fatalf("range over a good block: %v", err)
	}
	if c.n != 2 {
		t.Fatalf("%d failures reported, want 2", c.n)
	}
}

func TestFirstBlockDamageFailsBeforeTheStream(t *testing.T) {
	b, _, dir, _ := newBackend(t)
	body := randBytes(4096, 3)
	put(t, b, "small", body)
	flip(t, dir, body, 4000)
	if _, _, err := b.GetObject(context.Background(), "b", "small", nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("GetObject of a damaged small object: %v", err)
	}
}

func TestMultipartPartsCheckedAcrossBoundaries(t *testing.T) {
	b, _, dir, c := newBackend(t)
	ctx := context.Background()
	up, err := b.CreateUpload(ctx, "b", "mp", storage.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	// Parts that are not multiples of the block: the guessed range of a
	// read misses the part's blocks and the read is made again.
	sizes := []int{BlockSize + 1000, 2*BlockSize + 5, 777}
	var whole []byte
	var parts []storage.CompletePart
	for i, n := range sizes {
		body := randBytes(n, uint64(100+i))
		whole = append(whole, body...)
		if _, err := b.PutPart(ctx, "b", "mp", up.UploadID, i+1, storage.PutInput{Body: bytes.NewReader(body),
			Seal: func(m *storage.ObjectMeta) error { m.Size, m.ETag = int64(n), "p"; return nil }}); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, storage.CompletePart{Number: i + 1, ETag: "p"})
	}
	info, err := b.CompleteUpload(ctx, "b", "mp", up.UploadID, parts, storage.ObjectMeta{Size: int64(len(whole)), ETag: "x-3"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Of(info.Meta.System)
	if err != nil || s == nil || len(s.Segments) != 3 {
		t.Fatalf("multipart sums %+v, %v", s, err)
	}
	got, err := get(b, "mp", nil)
	if err != nil || !bytes.Equal(got, whole) {
		t.Fatalf("whole GET: %v", err)
	}
	for _, r := range [][2]int{{BlockSize + 900, 200}, {BlockSize + 1000, BlockSize}, {2*BlockSize + 2000, 2 * BlockSize}, {len(whole) - 800, 800}} {
		got, err := get(b, "mp", &storage.Range{Start: int64(r[0]), Length: int64(r[1])})
		if err != nil || !bytes.Equal(got, whole[r[0]:min(len(whole), r[0]+r[1])]) {
			t.Fatalf("range %v: %v", r, err)
		}
	}
	// Damage in the second part's first block.
	part2 := randBytes(sizes[1], 101)
	flip(t, dir, part2, 10)
	if _, err := get(b, "mp", &storage.Range{Start: int64(sizes[0]) + 5, Length: 10}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("range in the damaged part: %v", err)
	}
	if got, err := get(b, "mp", &storage.Range{Start: 0, Length: int64(sizes[0])}); err != nil || !bytes.Equal(got, whole[:sizes[0]]) {
		t.Fatalf("the good first part: %v", err)
	}
	if c.n != 1 {
		t.Fatalf("%d failures reported", c.n)
	}
}

func TestObjectsWithoutSumsAreServedAsStored(t *testing.T) {
	b, raw, _, _ := newBackend(t)
	body := randBytes(BlockSize+10, 9)
	put(t, raw, "old", body)
	got, err := get(b, "old", &storage.Range{Start: BlockSize - 3, Length: 6})
	if err != nil || !bytes.Equal(got, body[BlockSize-3:BlockSize+3]) {
		t.Fatalf("range of an object without sums: %v", err)
	}
}

func TestDecodeRefusesMalformed(t *testing.T) {
	for _, v := range []string{"", "!!", "AA", "AQ", (&Sums{Block: 4, Segments: []Segment{{Size: 9, Blocks: []uint32{1, 2}}}}).Encode()} {
		if _, err := Decode(v); !errors.Is(err, ErrBadSums) {
			t.Errorf("Decode(%q) = %v", v, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add((&Sums{Block: BlockSize, Segments: []Segment{{Size: 10, CRC: 1, Blocks: []uint32{1}}}}).Encode())
	f.Add("AQ")
	f.Fuzz(func(t *testing.T, v string) {
		s, err := Decode(v)
		if err != nil {
			return
		}
		again, err := Decode(s.Encode())
		if err != nil || again.Size() != s.Size() {
			t.Fatalf("round trip of %q: %v", v, err)
		}
	})
}

// TestCheck: Check passes a whole stored stream that matches its sums and
// names the damage in one that does not.
func TestCheck(t *testing.T) {
	b, _, dir, _ := newBackend(t)
	body := randBytes(3*BlockSize+17, 7)
	info := put(t, b, "k", body)
	if err := Check(bytes.NewReader(body), int64(len(body)), info.Meta.System, "b/k"); err != nil {
		t.Fatalf("intact: %v", err)
	}
	bad := bytes.Clone(body)
	bad[2*BlockSize+5] ^= 1
	if err := Check(bytes.NewReader(bad), int64(len(bad)), info.Meta.System, "b/k"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("flipped: %v", err)
	}
	if err := Check(bytes.NewReader(body[:len(body)-1]), int64(len(body)-1), info.Meta.System, "b/k"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short: %v", err)
	}
	if err := Check(bytes.NewReader(body), int64(len(body)), nil, "b/k"); !errors.Is(err, ErrNoSums) {
		t.Fatalf("no sums: %v", err)
	}
	_ = dir
}
