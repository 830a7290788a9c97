package datagen

import (
	"math"
	"sort"
)

// Phrases are uniform in [phraseMin, phraseMin+phraseSpan) bytes. Repeats
// reach back at most window bytes, inside deflate's 32 KiB window, so that
// gzip and zstd find the same repeats; phrases of at least 16 bytes are
// found by every compressor's match finder, including zstd's fast levels.
const (
	phraseMin  = 16
	phraseSpan = 97
	window     = 32000
)

// The vocabulary of text phrases: vocabSize pseudo-words, drawn with Zipf
// popularity. Text made of words from a skewed vocabulary is what makes
// compressors work as hard as on real text: gzip walks long hash chains
// of short matches ("the ", "and "), and zstd entropy-codes many literals.
// Random letters alone compress to the same ratio three times faster.
const (
	vocabSize = 2048
	zipfS     = 1.05
)

// letterWeights is the letter distribution of English words.
func letterWeights() map[byte]float64 {
	return map[byte]float64{
		'e': 12.7, 't': 9.1, 'a': 8.2, 'o': 7.5, 'i': 7.0, 'n': 6.7, 's': 6.3, 'h': 6.1,
		'r': 6.0, 'd': 4.3, 'l': 4.0, 'c': 2.8, 'u': 2.8, 'm': 2.4, 'w': 2.4, 'f': 2.2,
		'g': 2.0, 'y': 2.0, 'p': 1.9, 'b': 1.5, 'v': 1.0, 'k': 0.8, 'j': 0.15, 'x': 0.15,
		'q': 0.1, 'z': 0.07, 'T': 0.3, 'A': 0.3, 'I': 0.3, 'S': 0.2, '0': 0.3, '1': 0.3,
		'2': 0.2, '_': 0.1, '-': 0.2, '/': 0.1,
	}
}

// vocabulary holds the words, each with its separator, in 16-byte slots
// so that a word is copied with one fixed-size move.
type vocabulary struct {
	slots [vocabSize][16]byte
	lens  [vocabSize]uint8
	// zipf maps 16 uniform bits to a word rank.
	zipf [1 << 16]uint16
}

func newVocabulary() *vocabulary {
	v := &vocabulary{}
	r := rng{s: 0x7e57}
	lw := letterWeights()
	letters := make([]byte, 0, len(lw))
	for b := range lw {
		letters = append(letters, b)
	}
	sort.Slice(letters, func(i, j int) bool { return letters[i] < letters[j] })
	var cum []float64
	var total float64
	for _, b := range letters {
		total += lw[b]
		cum = append(cum, total)
	}
	pick := func(cdf []float64, sum float64) int {
		x := float64(r.next()>>11) / (1 << 53) * sum
		return min(sort.SearchFloat64s(cdf, x), len(cdf)-1)
	}
	// Word lengths of English text (1..12 letters).
	lenW := []float64{3, 17, 20, 16, 11, 9, 8, 6, 4, 3, 2, 1}
	var lenCum []float64
	var lenSum float64
	for _, w := range lenW {
		lenSum += w
		lenCum = append(lenCum, lenSum)
	}
	seps := []string{" ", " ", " ", " ", " ", " ", " ", " ", " ", " ", " ", " ", " ", " ", " ", " ", "\n", ", ", ". ", " "}
	for i := range v.slots {
		n := 1 + pick(lenCum, lenSum)
		for j := range n {
			v.slots[i][j] = letters[pick(cum, total)]
		}
		sep := seps[r.below(uint64(len(seps)))]
		copy(v.slots[i][n:], sep)
		v.lens[i] = uint8(n + len(sep))
	}
	// Quantised Zipf CDF over ranks.
	var norm float64
	for k := range vocabSize {
		norm += 1 / math.Pow(float64(k+1), zipfS)
	}
	var acc float64
	k := 0
	for i := range v.zipf {
		u := (float64(i) + 0.5) / (1 << 16)
		for k < vocabSize-1 && acc+1/math.Pow(float64(k+1), zipfS)/norm < u {
			acc += 1 / math.Pow(float64(k+1), zipfS) / norm
			k++
		}
		v.zipf[i] = uint16(k)
	}
	return v
}

// words fills dst with words; mask permutes which words are popular, per
// chunk.
func (v *vocabulary) words(r *rng, dst []byte, mask uint16) {
	i := 0
	for i < len(dst) {
		x := r.next()
		for range 4 {
			w := (v.zipf[uint16(x)] ^ mask) & (vocabSize - 1)
			x >>= 16
			if len(dst)-i >= 16 {
				*(*[16]byte)(dst[i : i+16]) = v.slots[w]
				i += int(v.lens[w])
				continue
			}
			i += copy(dst[i:], v.slots[w][:v.lens[w]])
			if i >= len(dst) {
				return
			}
		}
	}
}

// chunkParams are the resolved knobs for one chunk's content.
type chunkParams struct {
	zero   bool
	words  uint64 // probability (of 1<<32) that a new phrase is words rather than random bytes
	repeat uint64 // probability (of 1<<32) that a phrase repeats an earlier one
	vocab  *vocabulary
}

// The knob is one monotonic control in [0, 3]:
//   - [0, 1]: new phrases are random bytes; repeated phrases rise from 0 to
//     midRepeat.
//   - [1, 2]: new phrases turn from random bytes into words.
//   - [2, 3]: repeated phrases rise from midRepeat to maxRepeat.
//
// Words come in only once there are repeats, because zstd (klauspost,
// default level) stores a block with no matches raw where gzip would still
// Huffman-code it; along this path the two stay within a few percent of
// each other. Compressibility rises with the knob.
const (
	midRepeat = 0.25
	maxRepeat = 0.975
	maxKnob   = 3
)

func paramsForKnob(k float64, vocab *vocabulary) chunkParams {
	k = min(max(k, 0), maxKnob)
	q := midRepeat * min(k, 1)
	if k > 2 {
		q = midRepeat + (k-2)*(maxRepeat-midRepeat)
	}
	return chunkParams{
		words:  uint64(min(max(k-1, 0), 1) * (1 << 32)),
		repeat: uint64(q * (1 << 32)),
		vocab:  vocab,
	}
}

// generate writes len(dst) bytes of this chunk's content: a sequence of
// phrases, each either new (words, or random bytes) or an exact repeat of
// an earlier new phrase within the window. Repeating only whole new
// phrases keeps every occurrence of a repeated string identical, so a
// compressor that remembers one candidate per hash (zstd's fast levels)
// finds the same matches as one that searches chains (gzip).
func (p *chunkParams) generate(r *rng, dst []byte) {
	if p.zero {
		clear(dst)
		return
	}
	if p.repeat == 0 && p.words == 0 {
		r.fill(dst)
		return
	}
	mask := uint16(r.next())
	type span struct{ off, n int32 }
	var stack [2048]span
	phrases := stack[:0]
	lo := 0 // first phrase still inside the window
	n := len(dst)
	for pos := 0; pos < n; {
		for lo < len(phrases) && int(phrases[lo].off) < pos-window {
			lo++
		}
		x := r.next()
		if lo < len(phrases) && x&(1<<32-1) < p.repeat {
			s := phrases[lo+int(r.below(uint64(len(phrases)-lo)))]
			c := min(int(s.n), n-pos)
			copy(dst[pos:pos+c], dst[s.off:int(s.off)+c])
			pos += c
			continue
		}
		c := min(phraseMin+int(r.below(phraseSpan)), n-pos)
		if x>>32 < p.words {
			p.vocab.words(r, dst[pos:pos+c], mask)
		} else {
			r.fill(dst[pos : pos+c])
		}
		phrases = append(phrases, span{int32(pos), int32(c)})
		pos += c
	}
}
