package metrics

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"testing"
)

func textPayload(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "2024-05-01T10:00:%02d INFO tenant=t1 bucket=logs GET /items/%d status=200\n", i%60, i%97)
	}
	return b.Bytes()[:n]
}

func randomPayload(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func TestCompressibility(t *testing.T) {
	c := newTestCollector(Compressibility(4096, 1))
	serve(t, c, req("PutObject", "t1", "text", "a.log"), textPayload(10000))
	serve(t, c, req("PutObject", "t1", "random", "a.bin"), randomPayload(10000))
	// Reads are not sampled.
	serve(t, c, req("GetObject", "t1", "text", "a.log"), nil)
	s := flush(c, at(1))["compressibility"]
	text, random, tenant := s.Values["bucket:t1/text"], s.Values["bucket:t1/random"], s.Values["tenant:t1"]
	if text < 3 {
		t.Fatalf("log text compressibility %v, want > 3", text)
	}
	if random > 1.01 || random < 0.9 {
		t.Fatalf("random bytes compressibility %v, want ~1", random)
	}
	// The tenant's value is its buckets' total original over total
	// compressed: between the two, and the weights say so.
	if !(random < tenant && tenant < text) {
		t.Fatalf("tenant %v not between %v and %v", tenant, random, text)
	}
	w := s.Weights
	if got := (text*w["bucket:t1/text"] + random*w["bucket:t1/random"]) / (w["bucket:t1/text"] + w["bucket:t1/random"]); !approx(got, tenant) {
		t.Fatalf("weighted mean of buckets %v != tenant %v", got, tenant)
	}
	if !approx(w["bucket:t1/text"]*text, 10000) || !approx(w["tenant:t1"]*tenant, 20000) {
		t.Fatalf("every byte was sampled: weights %v values %v", w, s.Values)
	}
	if len(flush(c, at(2))["compressibility"].Values) != 0 {
		t.Fatal("an idle period has a compressibility")
	}
}

// With 1-in-N sampling, each target still gets its first chunk of every
// period sampled, and later chunks only one in N.
func TestCompressibilitySampling(t *testing.T) {
	const chunk = 1000
	c := newTestCollector(Compressibility(chunk, 1000))
	p := textPayload(10 * chunk)
	serve(t, c, req("PutObject", "t1", "b1", "k"), p)
	serve(t, c, req("PutObject", "t1", "b1", "k2"), p)
	s := flush(c, at(1))["compressibility"]
	// Only the first chunk of the first PUT was compressed.
	if plain := s.Values["bucket:t1/b1"] * s.Weights["bucket:t1/b1"]; !approx(plain, chunk) {
		t.Fatalf("sampled %v original bytes, want one chunk (%d)", plain, chunk)
	}
	// A new period: sampled again. Another bucket: sampled too.
	serve(t, c, req("PutObject", "t1", "b1", "k"), p)
	serve(t, c, req("PutObject", "t1", "b2", "k"), p[:chunk/2])
	s = flush(c, at(2))["compressibility"]
	for _, tg := range []string{"bucket:t1/b1", "bucket:t1/b2"} {
		if s.Values[tg] < 2 {
			t.Fatalf("%s not sampled in the second period: %v", tg, s.Values)
		}
	}
	if plain := s.Values["bucket:t1/b2"] * s.Weights["bucket:t1/b2"]; !approx(plain, chunk/2) {
		t.Fatalf("a short payload's only chunk: %v bytes", plain)
	}
}

// A payload read in odd pieces is cut in the same chunks.
func TestCompressibilityOddReads(t *testing.T) {
	m := Compressibility(1000, 1).(*compressibility)
	cell := m.NewCell().(*compCell)
	w := m.Payload(req("PutObject", "t1", "b", "k"), Cells{n: 1, c: [3]Cell{cell}})
	p := textPayload(3500)
	for len(p) > 0 {
		n := min(len(p), 333)
		w.Chunk(p[:n])
		p = p[n:]
	}
	w.End()
	if got := cell.num.Load(); got != 3500 {
		t.Fatalf("original bytes %d", got)
	}
}

func BenchmarkCompressibility4KiBPut(b *testing.B) {
	c := newTestCollector(Compressibility(DefaultSampleChunk, DefaultSampleEvery))
	p := textPayload(4096)
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		serve(b, c, req("PutObject", "t1", "b1", "k"), p)
	}
}
