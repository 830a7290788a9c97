package datagen

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

func generate(t testing.TB, spec Spec, seed uint64, size int) []byte {
	t.Helper()
	s, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(s.NewReader(seed, int64(size)))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != size {
		t.Fatalf("read %d bytes, want %d", len(b), size)
	}
	return b
}

func compressors(t testing.TB) *Compressors {
	t.Helper()
	c, err := NewCompressors()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// The issue's requirement: gzip and zstd both within ±10% of the target,
// for targets 1.0-10.0, on objects the calibration never saw.
func TestRealisticRatioWithinTenPercent(t *testing.T) {
	c := compressors(t)
	for _, target := range []float64{1.0, 1.1, 1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5, 6, 7, 8, 9, 10} {
		data := generate(t, Spec{Kind: Realistic, Ratio: target}, 0xfeed+uint64(target*100), 1<<20)
		gz, zs, _ := c.Both(data)
		t.Logf("target %5.2f: gzip %6.3f (%+5.1f%%)  zstd %6.3f (%+5.1f%%)", target, gz, (gz/target-1)*100, zs, (zs/target-1)*100)
		for name, got := range map[string]float64{"gzip": gz, "zstd": zs} {
			if math.Abs(got/target-1) > 0.10 {
				t.Errorf("target %.2f: %s ratio %.3f is off by more than 10%%", target, name, got)
			}
		}
	}
}

func TestZerosAndRandom(t *testing.T) {
	c := compressors(t)
	z := generate(t, Spec{Kind: Zeros}, 1, 1<<20)
	if !bytes.Equal(z, make([]byte, 1<<20)) {
		t.Fatal("zeros are not zeros")
	}
	r := generate(t, Spec{Kind: Random}, 1, 1<<20)
	gz, zs, _ := c.Both(r)
	if gz > 1.001 || zs > 1.001 {
		t.Fatalf("random data compresses: gzip %.4f zstd %.4f", gz, zs)
	}
	// Byte histogram of random data is flat: chi-square over 256 bins
	// stays far below what any skew gives (99.9% quantile is ~330).
	var hist [256]float64
	for _, b := range r {
		hist[b]++
	}
	exp := float64(len(r)) / 256
	var chi float64
	for _, h := range hist {
		chi += (h - exp) * (h - exp) / exp
	}
	if chi > 400 {
		t.Fatalf("random bytes are not uniform: chi-square %.0f", chi)
	}
}

// Same seed, same bytes, however the reader is drained; different seeds
// share no content.
func TestDeterministicAndChunkIndependent(t *testing.T) {
	spec := Spec{Kind: Realistic, Ratio: 3}
	s, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	const size = 3*ChunkSize + 1234
	want := make([]byte, size)
	s.Fill(42, want)
	for _, step := range []int{1, 7, 4096, ChunkSize - 1, ChunkSize, 2*ChunkSize + 5, size} {
		r := s.NewReader(42, size)
		var got []byte
		buf := make([]byte, step)
		for {
			n, err := r.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("reading in steps of %d gives different bytes", step)
		}
	}
	other := make([]byte, size)
	s.Fill(43, other)
	if bytes.Equal(other[:ChunkSize], want[:ChunkSize]) {
		t.Fatal("seeds 42 and 43 give the same content")
	}
	// No block of one object appears in the other, so deduplication finds
	// nothing; and together they compress barely better than alone (they
	// share only a vocabulary, as two documents in one language do).
	blocks := map[string]bool{}
	for i := 0; i+4096 <= size; i += 4096 {
		blocks[string(want[i:i+4096])] = true
	}
	for i := 0; i+4096 <= size; i += 4096 {
		if blocks[string(other[i:i+4096])] {
			t.Fatalf("block at %d of object 43 also in object 42", i)
		}
	}
	c := compressors(t)
	alone := c.Zstd(want[:2*ChunkSize])
	both := c.Zstd(append(append([]byte{}, want[:2*ChunkSize]...), other[:2*ChunkSize]...))
	if both > alone*1.05 {
		t.Fatalf("objects share content: ratio alone %.3f, together %.3f", alone, both)
	}
}

// A short object is the prefix of a long one, so sizes below a chunk cost
// only what they use.
func TestShortObjectIsPrefix(t *testing.T) {
	long := generate(t, Spec{Kind: Realistic, Ratio: 4}, 9, 2*ChunkSize)
	short := generate(t, Spec{Kind: Realistic, Ratio: 4}, 9, 5000)
	if !bytes.Equal(short, long[:5000]) {
		t.Fatal("a 5000-byte object is not the prefix of the longer one")
	}
}

func TestParseSpec(t *testing.T) {
	for in, want := range map[string]Spec{
		"zeros":          {Kind: Zeros},
		"random":         {Kind: Random},
		"realistic":      {Kind: Realistic, Ratio: 3},
		"realistic:7.5":  {Kind: Realistic, Ratio: 7.5},
		"mimic:/tmp/x.l": {Kind: Mimic, Sample: "/tmp/x.l"},
	} {
		got, err := ParseSpec(in)
		if err != nil || got.Kind != want.Kind || got.Ratio != want.Ratio || got.Sample != want.Sample {
			t.Errorf("ParseSpec(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if in != "realistic" && got.String() != in {
			t.Errorf("String() = %q, want %q", got.String(), in)
		}
	}
	for _, bad := range []string{"", "ones", "zeros:1", "realistic:x", "mimic"} {
		if _, err := ParseSpec(bad); err == nil {
			t.Errorf("ParseSpec(%q) accepted", bad)
		}
	}
	for _, bad := range []Spec{{Kind: Realistic, Ratio: 0.5}, {Kind: Realistic, Ratio: 100}, {Kind: Mimic}, {}} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%+v) accepted", bad)
		}
	}
}

// opticks is real English text shipped with Go.
func opticks(t testing.TB) []byte {
	b, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", "testdata", "Isaac.Newton-Opticks.txt"))
	if err != nil {
		t.Skipf("no sample text: %v", err)
	}
	return b
}

// A sample made of very different regions (text, random, zeros) is
// mimicked region by region, and the whole compresses like the sample.
func TestMimicFollowsSamplePerChunk(t *testing.T) {
	text := opticks(t)[:8*ChunkSize]
	rnd := generate(t, Spec{Kind: Random}, 5, 4*ChunkSize)
	sample := append(append(append([]byte{}, text...), rnd...), make([]byte, 2*ChunkSize)...)
	prof, err := ProfileOf(bytes.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(prof.Chunks) != 14 {
		t.Fatalf("profile has %d chunks, want 14", len(prof.Chunks))
	}
	s, err := New(Spec{Kind: Mimic, Profile: prof})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, len(sample))
	s.Fill(77, out)
	c := compressors(t)
	for i := range prof.Chunks {
		chunk := out[i*ChunkSize : (i+1)*ChunkSize]
		_, _, got := c.Both(chunk)
		want := prof.Chunks[i]
		// Zero chunks compress by hundreds; anything above 40 is "zeros".
		if want >= zeroChunkRatio {
			if got < zeroChunkRatio {
				t.Errorf("chunk %d: sample ratio %.0f (zeros), generated %.2f", i, want, got)
			}
			continue
		}
		if math.Abs(got/want-1) > 0.15 {
			t.Errorf("chunk %d: sample ratio %.3f, generated %.3f", i, want, got)
		}
	}
	for name, ratio := range map[string]func([]byte) float64{"gzip": c.Gzip, "zstd": c.Zstd} {
		want, got := ratio(sample[:12*ChunkSize]), ratio(out[:12*ChunkSize])
		t.Logf("%s: sample %.3f, mimic %.3f", name, want, got)
		if math.Abs(got/want-1) > 0.15 {
			t.Errorf("%s over text+random: sample %.3f, mimic %.3f", name, want, got)
		}
	}
}

// Compression speed on generated data should be of the same order as on
// real text of the same ratio (SDGen's second criterion). Logged, not
// asserted: timings are noisy.
func TestCompressionSpeedLikeText(t *testing.T) {
	if testing.Short() {
		t.Skip("timing report")
	}
	text := opticks(t)
	c := compressors(t)
	_, _, ratio := c.Both(text)
	gen := generate(t, Spec{Kind: Realistic, Ratio: ratio}, 3, len(text))
	speed := func(f func([]byte) float64, p []byte) float64 {
		start := time.Now()
		n := 0
		for time.Since(start) < 200*time.Millisecond {
			f(p)
			n++
		}
		return float64(n*len(p)) / 1e6 / time.Since(start).Seconds()
	}
	for name, f := range map[string]func([]byte) float64{"gzip": c.Gzip, "zstd": c.Zstd} {
		t.Logf("%s: Opticks %.2fx at %.0f MB/s; realistic:%.2f %.2fx at %.0f MB/s",
			name, f(text), speed(f, text), ratio, f(gen), speed(f, gen))
	}
}

func BenchmarkGenerate(b *testing.B) {
	for _, spec := range []Spec{{Kind: Zeros}, {Kind: Random}, {Kind: Realistic, Ratio: 1.5}, {Kind: Realistic, Ratio: 2.5}, {Kind: Realistic, Ratio: 3.5}, {Kind: Realistic, Ratio: 10}} {
		b.Run(spec.String(), func(b *testing.B) {
			s, err := New(spec)
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 4<<20)
			b.SetBytes(int64(len(buf)))
			cpu0 := processCPU(b)
			n := 0
			for i := 0; b.Loop(); i++ {
				s.Fill(uint64(i), buf)
				n++
			}
			// Per CPU second, which other load on the machine does not
			// change the way it changes MB/s.
			b.ReportMetric(float64(n*len(buf))/1e6/(processCPU(b)-cpu0).Seconds(), "MB/cpu-s")
		})
	}
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ExampleSource() {
	s, _ := New(Spec{Kind: Realistic, Ratio: 4})
	r := s.NewReader(1, 10<<20) // a 10 MiB object that compresses ~4x
	n, _ := io.Copy(io.Discard, r)
	fmt.Println(n)
	// Output: 10485760
}
