package datagen

import (
	"encoding/binary"
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

// textWeights is a byte distribution of English prose, markup and logs:
// what literal bytes look like in documents and text. The entropy of the
// quantised table is about 4.4 bits per byte.
var textWeights = map[byte]float64{
	' ': 16, 'e': 9.5, 't': 6.8, 'a': 6.2, 'o': 5.8, 'i': 5.4, 'n': 5.4, 's': 5.0,
	'h': 4.2, 'r': 4.6, 'd': 3.2, 'l': 3.2, 'u': 2.2, 'c': 2.4, 'm': 2.0, 'w': 1.4,
	'f': 1.7, 'g': 1.5, 'y': 1.4, 'p': 1.6, 'b': 1.1, 'v': 0.8, 'k': 0.5, 'x': 0.2,
	'j': 0.15, 'q': 0.1, 'z': 0.1, '\n': 1.6, ',': 1.0, '.': 1.0, '"': 0.3, '\'': 0.2,
	':': 0.4, ';': 0.1, '-': 0.4, '_': 0.2, '/': 0.3, '=': 0.3, '(': 0.15, ')': 0.15,
	'<': 0.1, '>': 0.1, 'T': 0.3, 'A': 0.3, 'I': 0.3, 'S': 0.3, 'C': 0.2, 'E': 0.2,
	'0': 0.6, '1': 0.6, '2': 0.5, '3': 0.4, '4': 0.3, '5': 0.3, '6': 0.3, '7': 0.3,
	'8': 0.3, '9': 0.3,
}

// textTable quantises textWeights to 256 entries (largest remainder) and
// shuffles them with a fixed seed, so that any prefix of the table is a
// fair sample of the distribution.
func textTable() [256]byte {
	type w struct {
		b    byte
		frac float64
	}
	var sum float64
	syms := make([]byte, 0, len(textWeights))
	for b, v := range textWeights {
		sum += v
		syms = append(syms, b)
	}
	sort.Slice(syms, func(i, j int) bool { return syms[i] < syms[j] })
	var out []byte
	var rems []w
	for _, b := range syms {
		exact := textWeights[b] / sum * 256
		n := int(exact)
		for range n {
			out = append(out, b)
		}
		rems = append(rems, w{b, exact - float64(n)})
	}
	sort.SliceStable(rems, func(i, j int) bool { return rems[i].frac > rems[j].frac })
	for i := 0; len(out) < 256; i++ {
		out = append(out, rems[i].b)
	}
	var t [256]byte
	copy(t[:], out)
	r := rng{s: 0x5d6e7f}
	for i := 255; i > 0; i-- {
		j := r.below(uint64(i + 1))
		t[i], t[j] = t[j], t[i]
	}
	return t
}

// litTables builds literal tables on demand and shares them: one per
// text fraction (257 at most), whatever the number of chunks using them.
type litTables struct {
	text   [256]byte
	single map[int]*[256]byte
	pairs  map[int]*[1 << 16]uint16
}

func newLitTables() *litTables {
	return &litTables{text: textTable(), single: map[int]*[256]byte{}, pairs: map[int]*[1 << 16]uint16{}}
}

// get returns the table whose first textN entries are text-like and the
// rest uniform, and its pair table.
func (l *litTables) get(textN int) (*[256]byte, *[1 << 16]uint16) {
	if t, ok := l.single[textN]; ok {
		return t, l.pairs[textN]
	}
	t := new([256]byte)
	for i := range t {
		if i < textN {
			t[i] = l.text[i]
		} else {
			t[i] = byte(i)
		}
	}
	pt := new([1 << 16]uint16)
	for i := range pt {
		pt[i] = uint16(t[i&0xff]) | uint16(t[i>>8])<<8
	}
	l.single[textN], l.pairs[textN] = t, pt
	return t, pt
}

// chunkParams are the resolved knobs for one chunk's content.
type chunkParams struct {
	zero   bool
	lit    *[256]byte       // a random byte indexes this to pick a literal
	pairs  *[1 << 16]uint16 // lit squared: 16 random bits pick two literals
	repeat uint64           // probability (of 1<<32) that a phrase repeats an earlier one
}

// The knob is one monotonic control in [0, 3]:
//   - [0, 1]: uniform literal bytes; repeated phrases rise from 0 to midRepeat.
//   - [1, 2]: the literal table goes from uniform bytes to text-like ones.
//   - [2, 3]: repeated phrases rise from midRepeat to maxRepeat.
//
// Literal skew comes in only once there are repeats, because zstd
// (klauspost, default level) stores a block with no matches raw where gzip
// would still Huffman-code it; with this path the two stay within a few
// percent of each other everywhere. Compressibility rises with the knob.
const (
	midRepeat = 0.25
	maxRepeat = 0.975
	maxKnob   = 3
)

func paramsForKnob(k float64, tables *litTables) chunkParams {
	var p chunkParams
	k = min(max(k, 0), maxKnob)
	p.lit, p.pairs = tables.get(int(math.Round(min(max(k-1, 0), 1) * 256)))
	q := midRepeat * min(k, 1)
	if k > 2 {
		q = midRepeat + (k-2)*(maxRepeat-midRepeat)
	}
	p.repeat = uint64(q * (1 << 32))
	return p
}

// generate writes len(dst) bytes of this chunk's content: a sequence of
// phrases, each either new (literal bytes) or an exact repeat of an
// earlier new phrase within the window. Repeating only whole new phrases
// keeps every occurrence of a repeated string identical, so a compressor
// that remembers one candidate per hash (zstd's fast levels) finds the
// same matches as one that searches chains (gzip).
func (p *chunkParams) generate(r *rng, dst []byte) {
	if p.zero {
		clear(dst)
		return
	}
	if p.repeat == 0 {
		p.literals(r, dst)
		return
	}
	type span struct{ off, n int32 }
	var stack [1024]span
	phrases := stack[:0]
	lo := 0 // first phrase still inside the window
	n := len(dst)
	for pos := 0; pos < n; {
		for lo < len(phrases) && int(phrases[lo].off) < pos-window {
			lo++
		}
		if lo < len(phrases) && r.next()&(1<<32-1) < p.repeat {
			s := phrases[lo+int(r.below(uint64(len(phrases)-lo)))]
			c := min(int(s.n), n-pos)
			copy(dst[pos:pos+c], dst[s.off:int(s.off)+c])
			pos += c
			continue
		}
		c := min(phraseMin+int(r.below(phraseSpan)), n-pos)
		p.literals(r, dst[pos:pos+c])
		phrases = append(phrases, span{int32(pos), int32(c)})
		pos += c
	}
}

func (p *chunkParams) literals(r *rng, dst []byte) {
	t, pt := p.lit, p.pairs
	for len(dst) >= 8 {
		v := r.next()
		_ = dst[7]
		binary.LittleEndian.PutUint16(dst[0:], pt[uint16(v)])
		binary.LittleEndian.PutUint16(dst[2:], pt[uint16(v>>16)])
		binary.LittleEndian.PutUint16(dst[4:], pt[uint16(v>>32)])
		binary.LittleEndian.PutUint16(dst[6:], pt[uint16(v>>48)])
		dst = dst[8:]
	}
	if len(dst) > 0 {
		v := r.next()
		for i := range dst {
			dst[i] = t[byte(v)]
			v >>= 8
		}
	}
}
