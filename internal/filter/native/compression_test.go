package native

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/facet-sds/facet/internal/filter"
)

const testFrame = 64 << 10

var engines = []string{"zstd", "gzip", "lz4"}

func compressionParams(engine string, frame int) filter.Params {
	return filter.Params{"engine": engine, "frame": strconv.Itoa(frame)}
}

func TestCompressionRoundTrip(t *testing.T) {
	reg := testRegistry()
	sizes := []int{0, 1, testFrame - 1, testFrame, testFrame + 1, 3*testFrame + 17, 3<<20 + 3}
	for _, eng := range engines {
		f := newFilter(t, reg, "compression", compressionParams(eng, testFrame), filter.Env{})
		for _, kind := range []string{"text", "random"} {
			for _, size := range sizes {
				t.Run(fmt.Sprintf("%s/%s/%d", eng, kind, size), func(t *testing.T) {
					plain := textData(uint64(size), size)
					if kind == "random" {
						plain = randData(uint64(size), size)
					}
					stored, rec := roundTrip(t, f, plain)
					frames := (size + testFrame - 1) / testFrame
					switch {
					case kind == "random":
						// Incompressible frames are stored raw: 4 bytes each.
						if len(stored) != size+crcSize*frames {
							t.Fatalf("random data: stored %d bytes for %d in %d frames", len(stored), size, frames)
						}
					case size >= testFrame:
						if len(stored) > size*6/10 {
							t.Fatalf("text data: stored %d bytes for %d", len(stored), size)
						}
					}
					p, s, ok := CompressionSizes(rec)
					if !ok || p != int64(size) || s != int64(len(stored)) {
						t.Fatalf("CompressionSizes = %d, %d, %v; want %d, %d", p, s, ok, size, len(stored))
					}
				})
			}
		}
	}
}

// Every level of every engine, and the default frame (1 MiB).
func TestCompressionLevelsAndDefaultFrame(t *testing.T) {
	reg := testRegistry()
	plain := textData(3, 2*testFrame+300)
	for _, eng := range engines {
		e, _ := parseEngine(eng)
		lo, hi, _ := e.levels()
		for level := lo; level <= hi; level++ {
			p := compressionParams(eng, testFrame)
			p["level"] = strconv.Itoa(level)
			f := newFilter(t, reg, "compression", p, filter.Env{})
			stored, rec := encode(t, f, plain)
			if len(stored) > len(plain)*6/10 {
				t.Errorf("%s level %d: %d bytes stored for %d", eng, level, len(stored), len(plain))
			}
			// Decoding needs nothing but the record: an instance with
			// other parameters undoes it.
			other := newFilter(t, reg, "compression", nil, filter.Env{})
			got, err := readRange(decode(t, other, rec, newMemSource(stored)), 0, int64(len(plain)))
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("%s level %d: round trip failed: %v", eng, level, err)
			}
		}
	}
	big := textData(4, defaultFrame+defaultFrame/2) // a full frame and a partial one
	f := newFilter(t, reg, "compression", nil, filter.Env{})
	stored, rec := encode(t, f, big)
	if rec.Params["frame"] != strconv.Itoa(defaultFrame) || rec.Params["engine"] != "zstd" {
		t.Fatalf("defaults not applied: %v", rec.Params)
	}
	if ix, _ := parseFrameIndex(rec); len(ix.payload) != 2 {
		t.Fatalf("%d frames, want 2", len(ix.payload))
	}
	got, err := readRange(decode(t, f, rec, newMemSource(stored)), defaultFrame-10, 20)
	if err != nil || !bytes.Equal(got, big[defaultFrame-10:defaultFrame+10]) {
		t.Fatalf("range across the default frame boundary: %v", err)
	}
}

// mixedData alternates text and random frames, so ranges cross both
// compressed and raw frames.
func mixedData(n int) []byte {
	var b []byte
	for i := 0; len(b) < n; i++ {
		chunk := textData(uint64(i), testFrame+1000)
		if i%3 == 2 {
			chunk = randData(uint64(i), testFrame-333)
		}
		b = append(b, chunk...)
	}
	return b[:n]
}

func TestCompressionRanges(t *testing.T) {
	reg := testRegistry()
	plain := mixedData(20*testFrame + 999)
	size := int64(len(plain))
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			f := newFilter(t, reg, "compression", compressionParams(eng, testFrame), filter.Env{})
			stored, rec := encode(t, f, plain)
			ix, err := parseFrameIndex(rec)
			if err != nil {
				t.Fatal(err)
			}
			var raw, compressed int
			for _, p := range ix.payload {
				if p == 0 {
					raw++
				} else {
					compressed++
				}
			}
			if raw == 0 || compressed == 0 {
				t.Fatalf("want both raw and compressed frames, got %d raw, %d compressed", raw, compressed)
			}
			ms := newMemSource(stored)
			src := decode(t, f, rec, ms)
			checkRanges(t, src, ms, plain, rangesFor(7, size, testFrame), func(off, n, requested int64, opens int) {
				// Exactly the frames the range overlaps, in one request:
				// at most one partial frame at each end beyond the range.
				first, last := off/testFrame, (off+n-1)/testFrame
				if n == 0 {
					first, last = 0, -1
				}
				if want := ix.off[last+1] - ix.off[first]; requested != want || opens > 1 {
					t.Fatalf("range [%d,+%d): %d bytes in %d opens, want %d in 1", off, n, requested, opens, want)
				}
				if bound := n + 2*(testFrame+crcSize); requested > bound {
					t.Fatalf("range [%d,+%d): read %d stored bytes, more than %d", off, n, requested, bound)
				}
			})
			// Out-of-range requests are refused, not clamped.
			for _, r := range [][2]int64{{-1, 1}, {0, size + 1}, {size, 1}, {1, -1}} {
				if _, err := src.Open(context.Background(), r[0], r[1]); err == nil {
					t.Errorf("Open(%d, %d) accepted", r[0], r[1])
				}
			}
		})
	}
}

// Encode streams: it never reads more than one frame ahead of what it
// has handed out.
func TestCompressionStreams(t *testing.T) {
	reg := testRegistry()
	f := newFilter(t, reg, "compression", compressionParams("zstd", testFrame), filter.Env{}).(*compression)
	plain := textData(1, 40*testFrame)
	src := &countingReader{r: bytes.NewReader(plain)}
	r, _, err := f.Encode(context.Background(), testReq, src)
	if err != nil {
		t.Fatal(err)
	}
	e := r.(*frameEncoder)
	buf := make([]byte, 100)
	for first := true; ; first = false {
		_, err := r.Read(buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		// One plaintext frame and one encoded frame are all it holds:
		// what it consumed is what it encoded, and the first byte out
		// came after reading a single frame.
		if src.n != e.plain || len(e.pending) > testFrame+crcSize {
			t.Fatalf("consumed %d, encoded %d, holding %d", src.n, e.plain, len(e.pending))
		}
		if first && src.n > testFrame {
			t.Fatalf("read %d bytes before emitting the first frame", src.n)
		}
	}
	if src.n != int64(len(plain)) {
		t.Fatalf("consumed %d of %d", src.n, len(plain))
	}
}

func TestCompressionCancel(t *testing.T) {
	reg := testRegistry()
	f := newFilter(t, reg, "compression", nil, filter.Env{}).(*compression)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, _, err := f.Encode(ctx, testReq, bytes.NewReader(textData(1, 100)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(r); !errors.Is(err, context.Canceled) {
		t.Fatalf("read after cancel: %v", err)
	}
}

func TestCompressionTamper(t *testing.T) {
	reg := testRegistry()
	plain := mixedData(6*testFrame + 5)
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			f := newFilter(t, reg, "compression", compressionParams(eng, testFrame), filter.Env{})
			stored, rec := encode(t, f, plain)
			ix, _ := parseFrameIndex(rec)
			// A flipped byte anywhere: in a payload, in a CRC, in a
			// compressed frame's header, in a raw frame.
			positions := []int64{0, 1, int64(len(stored)) - 1, int64(len(stored)) / 2}
			for i := range ix.payload {
				positions = append(positions, ix.off[i], ix.off[i]+7, ix.off[i+1]-crcSize, ix.off[i+1]-1)
			}
			for _, pos := range positions {
				bad := bytes.Clone(stored)
				bad[pos] ^= 0x20
				_, err := readRange(decode(t, f, rec, newMemSource(bad)), 0, int64(len(plain)))
				if !errors.Is(err, filter.ErrIntegrity) {
					t.Fatalf("byte %d flipped: err = %v, want ErrIntegrity", pos, err)
				}
			}
			// The record is data too.
			mutations := map[string]func(r *filter.Record){
				"size":          func(r *filter.Record) { r.Size-- },
				"plain":         func(r *filter.Record) { r.Params["plain"] = strconv.Itoa(len(plain) + 1) },
				"plain garbage": func(r *filter.Record) { r.Params["plain"] = "-5" },
				"engine":        func(r *filter.Record) { r.Params["engine"] = "brotli" },
				"frame":         func(r *filter.Record) { r.Params["frame"] = "100" },
				"unknown field": func(r *filter.Record) { r.Params["eval"] = "1" },
				"index base64":  func(r *filter.Record) { r.Params["index"] += "!" },
				"index short":   func(r *filter.Record) { r.Params["index"] = r.Params["index"][:4] },
				"index grown": func(r *filter.Record) {
					b, _ := base64.RawStdEncoding.DecodeString(r.Params["index"])
					b[0]++
					r.Params["index"] = base64.RawStdEncoding.EncodeToString(b)
				},
				"index extra": func(r *filter.Record) {
					b, _ := base64.RawStdEncoding.DecodeString(r.Params["index"])
					r.Params["index"] = base64.RawStdEncoding.EncodeToString(binary.AppendUvarint(b, 0))
				},
				"filter": func(r *filter.Record) { r.Filter = "encryption" },
				"huge":   func(r *filter.Record) { r.Params["plain"] = "9223372036854775807" },
			}
			for name, mutate := range mutations {
				r := rec
				r.Params = map[string]string{}
				for k, v := range rec.Params {
					r.Params[k] = v
				}
				mutate(&r)
				src := newMemSource(stored)
				if name == "size" {
					src = newMemSource(stored[:len(stored)-1])
				}
				if _, err := f.(filter.Decoder).Decode(context.Background(), testReq, r, src); !errors.Is(err, filter.ErrIntegrity) {
					t.Errorf("record %s: err = %v, want ErrIntegrity", name, err)
				}
			}
			// A source shorter than the record says.
			if _, err := f.(filter.Decoder).Decode(context.Background(), testReq, rec, newMemSource(stored[:len(stored)-10])); !errors.Is(err, filter.ErrIntegrity) {
				t.Errorf("truncated source: %v", err)
			}
			// A future version is refused, not misread.
			r := rec
			r.Version = compressionVersion + 1
			if _, err := f.(filter.Decoder).Decode(context.Background(), testReq, r, newMemSource(stored)); err == nil {
				t.Error("record of a future version accepted")
			}
		})
	}
}

// shortSource returns fewer bytes than asked, as a truncated file would.
type shortSource struct{ *memSource }

func (s shortSource) Open(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	rc, err := s.memSource.Open(ctx, off, n)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(io.LimitReader(rc, n/2)), nil
}

// failingSource fails after some bytes, as a broken disk or a dropped
// backend connection would.
type failingSource struct {
	*memSource
	after int64
	err   error
}

func (s failingSource) Open(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	rc, err := s.memSource.Open(ctx, off, n)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(io.MultiReader(io.LimitReader(rc, s.after), errReader{s.err})), nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestCompressionSourceErrors(t *testing.T) {
	reg := testRegistry()
	f := newFilter(t, reg, "compression", compressionParams("zstd", testFrame), filter.Env{})
	plain := textData(2, 4*testFrame)
	stored, rec := encode(t, f, plain)

	_, err := readRange(decode(t, f, rec, shortSource{newMemSource(stored)}), 0, int64(len(plain)))
	if !errors.Is(err, filter.ErrIntegrity) {
		t.Fatalf("short source: %v, want ErrIntegrity", err)
	}
	// The source's own failures pass through as they are: the data is
	// not known to be bad.
	boom := errors.New("disk on fire")
	_, err = readRange(decode(t, f, rec, failingSource{newMemSource(stored), 100, boom}), 0, int64(len(plain)))
	if !errors.Is(err, boom) || errors.Is(err, filter.ErrIntegrity) {
		t.Fatalf("failing source: %v, want the source's error", err)
	}
}

type failWriter struct{ after int }

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.after {
		n := w.after
		w.after = 0
		return n, errors.New("client went away")
	}
	w.after -= len(p)
	return len(p), nil
}

func TestCompressionWriteToErrors(t *testing.T) {
	f := newFilter(t, testRegistry(), "compression", compressionParams("lz4", testFrame), filter.Env{})
	plain := textData(5, 3*testFrame)
	stored, rec := encode(t, f, plain)
	src := decode(t, f, rec, newMemSource(stored))
	rc, _ := src.Open(context.Background(), 0, src.Size())
	n, err := io.Copy(&failWriter{after: testFrame + 10}, rc)
	if err == nil || err.Error() != "client went away" || n != testFrame+10 {
		t.Fatalf("io.Copy to a failing writer = %d, %v", n, err)
	}
	rc.Close()
	bad := bytes.Clone(stored)
	bad[len(bad)-1] ^= 1
	rc, _ = decode(t, f, rec, newMemSource(bad)).Open(context.Background(), 0, src.Size())
	if _, err := io.Copy(io.Discard, rc); !errors.Is(err, filter.ErrIntegrity) {
		t.Fatalf("WriteTo over a corrupt frame: %v", err)
	}
}

// io.Copy takes the encoder's WriteTo: same stream, same record.
func TestCompressionEncodeWriteTo(t *testing.T) {
	f := newFilter(t, testRegistry(), "compression", compressionParams("zstd", testFrame), filter.Env{})
	plain := mixedData(7*testFrame + 3)
	want, wantRec := encode(t, f, plain)
	r, rec, err := f.(filter.Encoder).Encode(context.Background(), testReq, bytes.NewReader(plain))
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if _, err := io.Copy(&got, r); err != nil {
		t.Fatal(err)
	}
	gotRec, err := rec()
	if err != nil || !bytes.Equal(got.Bytes(), want) || gotRec.Size != wantRec.Size || gotRec.Params["index"] != wantRec.Params["index"] {
		t.Fatalf("WriteTo produced another stream or record: %v", err)
	}
	r, rec, _ = f.(filter.Encoder).Encode(context.Background(), testReq, bytes.NewReader(plain))
	if _, err := io.Copy(&failWriter{after: 1000}, r); err == nil || err.Error() != "client went away" {
		t.Fatalf("WriteTo to a failing writer: %v", err)
	}
	if _, err := rec(); err == nil {
		t.Fatal("record of an unfinished stream")
	}
}

func TestCompressionParams(t *testing.T) {
	reg := testRegistry()
	in, _ := reg.Lookup("compression")
	for _, c := range []struct {
		p    filter.Params
		want string
	}{
		{filter.Params{"levle": "3"}, `compression: unknown parameter "levle" (known: engine, level, frame)`},
		{filter.Params{"engine": "brotli"}, `compression: engine="brotli": want one of gzip, zstd, lz4`},
		{filter.Params{"engine": "gzip", "level": "0"}, `compression: level 0: gzip takes 1-9`},
		{filter.Params{"engine": "zstd", "level": "5"}, `compression: level 5: zstd takes 1-4`},
		{filter.Params{"level": "9"}, `compression: level 9: zstd takes 1-4`},
		{filter.Params{"engine": "lz4", "level": "10"}, `compression: level=10 out of range 0..9`},
		{filter.Params{"engine": "lz4", "level": "x"}, `compression: level="x": want an integer`},
		{filter.Params{"frame": "1024"}, `compression: frame=1024 out of range 65536..16777216`},
		{filter.Params{"frame": "33554432"}, `compression: frame=33554432 out of range 65536..16777216`},
		{filter.Params{"frame": "1MiB"}, `compression: frame="1MiB": want a size in bytes`},
	} {
		_, err := in.New(c.p, filter.Env{})
		if err == nil || err.Error() != c.want {
			t.Errorf("New(%v):\n got %v\nwant %s", c.p, err, c.want)
		}
	}
	for _, c := range []struct {
		p     filter.Params
		level int
	}{
		{filter.Params{"engine": "gzip"}, 6},
		{filter.Params{"engine": "zstd"}, 2},
		{filter.Params{"engine": "lz4"}, 0},
		{nil, 2},
		{filter.Params{"engine": "gzip", "level": "1", "frame": "65536"}, 1},
		{filter.Params{"engine": "lz4", "level": "9", "frame": "16777216"}, 9},
	} {
		f, err := in.New(c.p, filter.Env{})
		if err != nil {
			t.Fatalf("New(%v): %v", c.p, err)
		}
		if got := f.(*compression).level; got != c.level {
			t.Errorf("New(%v): level %d, want %d", c.p, got, c.level)
		}
	}
}

// Instances share their Info's codecs, and use them from many goroutines.
func TestCompressionConcurrent(t *testing.T) {
	reg := testRegistry()
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			eng := engines[g%len(engines)]
			f := newFilter(t, reg, "compression", compressionParams(eng, testFrame), filter.Env{})
			plain := mixedData(5*testFrame + g)
			stored, rec := encode(t, f, plain)
			src := decode(t, f, rec, newMemSource(stored))
			for _, r := range rangesFor(uint64(g), int64(len(plain)), testFrame)[:20] {
				got, err := readRange(src, r[0], r[1])
				if err != nil || !bytes.Equal(got, plain[r[0]:r[0]+r[1]]) {
					t.Errorf("%s [%d,+%d): %v", eng, r[0], r[1], err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestBufClasses(t *testing.T) {
	cs := newCodecs()
	for _, n := range []int{1, minFrame, minFrame + crcSize, defaultFrame + crcSize, 3 << 20, maxFrame + crcSize} {
		b := cs.getBuf(n)
		if len(*b) < n {
			t.Fatalf("getBuf(%d) gave %d bytes", n, len(*b))
		}
		if c := bufClass(n); c > 0 && len(*b) > 2*(n+bufSlack(n)) {
			t.Fatalf("getBuf(%d) gave %d bytes: class too large", n, len(*b))
		}
		cs.putBuf(b)
	}
	if b := cs.getBuf(maxFrame * 2); len(*b) != maxFrame*2 {
		t.Fatal("oversized buffer")
	}
}

// benchText is what the compression benchmarks compress: text, not zeros.
func benchText(b *testing.B) []byte {
	b.Helper()
	return textData(42, 32<<20)
}

// BenchmarkCompression compares the filter (frames of 1 MiB, the default
// level) with the library compressing the same data as one stream.
func BenchmarkCompression(b *testing.B) {
	plain := benchText(b)
	reg := testRegistry()
	buf := make([]byte, 256<<10)
	for _, eng := range engines {
		f := newFilter(b, reg, "compression", filter.Params{"engine": eng}, filter.Env{}).(*compression)
		b.Run(eng+"/filter", func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			var stored int64
			for b.Loop() {
				r, rec, err := f.Encode(context.Background(), testReq, bytes.NewReader(plain))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, buf); err != nil {
					b.Fatal(err)
				}
				r2, _ := rec()
				stored = r2.Size
			}
			b.ReportMetric(float64(len(plain))/float64(stored), "ratio")
		})
		b.Run(eng+"/library", func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			cw := &countWriter{}
			w := libraryWriter(b, eng, f.level, cw)
			for b.Loop() {
				cw.n = 0
				w.Reset(cw)
				if _, err := w.Write(plain); err != nil {
					b.Fatal(err)
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(plain))/float64(cw.n), "ratio")
		})
	}
}

func BenchmarkDecompression(b *testing.B) {
	plain := benchText(b)
	reg := testRegistry()
	out := make([]byte, 256<<10)
	for _, eng := range engines {
		f := newFilter(b, reg, "compression", filter.Params{"engine": eng}, filter.Env{}).(*compression)
		stored, rec := encode(b, f, plain)
		b.Run(eng+"/filter", func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			src := decode(b, f, rec, newMemSource(stored))
			for b.Loop() {
				rc, err := src.Open(context.Background(), 0, src.Size())
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{rc}, out); err != nil {
					b.Fatal(err)
				}
				rc.Close()
			}
		})
		var lib bytes.Buffer
		w := libraryWriter(b, eng, f.level, &lib)
		w.Write(plain)
		w.Close()
		b.Run(eng+"/library", func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			for b.Loop() {
				r := libraryReader(b, eng, bytes.NewReader(lib.Bytes()))
				if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

type resetWriter interface {
	io.WriteCloser
	Reset(io.Writer)
}

// libraryWriter is the engine's own streaming writer at the same level.
func libraryWriter(b *testing.B, eng string, level int, w io.Writer) resetWriter {
	switch eng {
	case "zstd":
		levels := map[int]zstd.EncoderLevel{1: zstd.SpeedFastest, 2: zstd.SpeedDefault, 3: zstd.SpeedBetterCompression, 4: zstd.SpeedBestCompression}
		zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(levels[level]))
		if err != nil {
			b.Fatal(err)
		}
		return zw
	case "gzip":
		zw, err := gzip.NewWriterLevel(w, level)
		if err != nil {
			b.Fatal(err)
		}
		return zw
	default:
		zw := lz4.NewWriter(w)
		if err := zw.Apply(lz4.CompressionLevelOption(lz4.Fast)); err != nil {
			b.Fatal(err)
		}
		return zw
	}
}

func libraryReader(b *testing.B, eng string, r io.Reader) io.Reader {
	switch eng {
	case "zstd":
		zr, err := zstd.NewReader(r)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(zr.Close)
		return zr
	case "gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			b.Fatal(err)
		}
		return zr
	default:
		return lz4.NewReader(r)
	}
}

// FuzzCompressionDecode alters a stored stream and its index: decoding
// must never panic, and whatever it returns without an error must be the
// plaintext that was written.
func FuzzCompressionDecode(f *testing.F) {
	reg := testRegistry()
	plain := mixedData(3*testFrame + 100)
	type sample struct {
		stored []byte
		rec    filter.Record
	}
	var samples []sample
	for _, eng := range engines {
		stored, rec := encode(f, newFilter(f, reg, "compression", compressionParams(eng, testFrame), filter.Env{}), plain)
		samples = append(samples, sample{stored, rec})
	}
	f.Add(uint8(0), uint32(0), uint8(1), "", int64(0))
	f.Add(uint8(1), uint32(70000), uint8(0x80), "", int64(5))
	f.Add(uint8(2), uint32(3), uint8(0), "AAAA", int64(testFrame-1))
	dec := newFilter(f, reg, "compression", nil, filter.Env{}).(*compression)
	f.Fuzz(func(t *testing.T, which uint8, pos uint32, flip uint8, index string, off int64) {
		s := samples[int(which)%len(samples)]
		stored := bytes.Clone(s.stored)
		stored[int(pos)%len(stored)] ^= flip
		rec := s.rec
		if index != "" {
			rec.Params = cloneParams(s.rec.Params)
			rec.Params["index"] = index
		}
		src, err := dec.Decode(context.Background(), testReq, rec, newMemSource(stored))
		if err != nil {
			return
		}
		size := src.Size()
		if size != int64(len(plain)) {
			t.Fatalf("decoded size %d, wrote %d", size, len(plain))
		}
		off = (off%size + size) % size
		got, err := readRange(src, off, size-off)
		if err == nil && !bytes.Equal(got, plain[off:]) {
			t.Fatalf("wrong data without an error (byte %d ^ %#x)", int(pos)%len(stored), flip)
		}
	})
}
