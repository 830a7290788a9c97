// Package datagen owns the benchmark's object contents: zeros, random
// bytes, and realistic data that compresses like real data does, the way
// SDGen (IOStack D2.2 §9.2) mimics datasets. Compression results on zeros or
// random bytes say nothing about a system with data reduction, so
// benchmarks that exercise compression use the realistic kinds.
//
// Realistic content is built per 64 KiB chunk, as SDGen characterises it:
// a sequence of phrases, each either new or an exact repeat of an earlier
// phrase of the same chunk. New phrases are text (words drawn with Zipf
// popularity from a vocabulary with English letter and word-length
// frequencies) or random bytes. One knob moves from random bytes through
// text to ever more repeats; a calibration table maps a requested ratio to
// it, so that gzip and zstd both reach the ratio within a few percent and
// compress it about as fast as real text of that ratio. A mimic profile
// gives every chunk its own ratio, measured on a sample file.
//
// Generation is deterministic: the same Spec, seed and size give the same
// bytes, so runs are repeatable and a reader of an object can be checked.
package datagen

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"strings"
)

// ChunkSize is the unit of characterisation and generation (SDGen's
// default). Repeats never cross a chunk boundary, so gzip's 32 KiB window
// and zstd's larger one see the same redundancy.
const ChunkSize = 64 << 10

// Kind names a content model.
type Kind string

// The content models.
const (
	Zeros     Kind = "zeros"
	Random    Kind = "random"
	Realistic Kind = "realistic"
	Mimic     Kind = "mimic"
)

// Spec says what to generate.
type Spec struct {
	Kind Kind `json:"kind" yaml:"kind"`
	// Ratio is the target compression ratio (original/compressed) for
	// Realistic, from 1.0 up to MaxRatio.
	Ratio float64 `json:"ratio,omitempty" yaml:"ratio,omitempty"`
	// Sample is a file whose per-chunk compressibility Mimic reproduces
	// (used when Profile is nil).
	Sample string `json:"sample,omitempty" yaml:"sample,omitempty"`
	// Profile is a precomputed characterisation for Mimic.
	Profile *Profile `json:"profile,omitempty" yaml:"profile,omitempty"`
}

// ParseSpec reads the one-line form used by flags: "zeros", "random",
// "realistic:3.5" (or "realistic" for ratio 3), "mimic:PATH".
func ParseSpec(s string) (Spec, error) {
	kind, arg, _ := strings.Cut(s, ":")
	switch Kind(kind) {
	case Zeros, Random:
		if arg != "" {
			return Spec{}, fmt.Errorf("data %q: %s takes no argument", s, kind)
		}
		return Spec{Kind: Kind(kind)}, nil
	case Realistic:
		r := 3.0
		if arg != "" {
			v, err := strconv.ParseFloat(arg, 64)
			if err != nil {
				return Spec{}, fmt.Errorf("data %q: ratio: %w", s, err)
			}
			r = v
		}
		return Spec{Kind: Realistic, Ratio: r}, nil
	case Mimic:
		if arg == "" {
			return Spec{}, fmt.Errorf("data %q: mimic needs a sample file (mimic:PATH)", s)
		}
		return Spec{Kind: Mimic, Sample: arg}, nil
	}
	return Spec{}, fmt.Errorf("data %q: unknown kind (want zeros, random, realistic[:RATIO] or mimic:PATH)", s)
}

// String is the one-line form.
func (s Spec) String() string {
	switch s.Kind {
	case Realistic:
		return fmt.Sprintf("realistic:%g", s.Ratio)
	case Mimic:
		if s.Sample != "" {
			return "mimic:" + s.Sample
		}
		return "mimic"
	}
	return string(s.Kind)
}

// Source makes readers of one Spec. It is immutable once built and safe for
// concurrent use; build it once per run, since Mimic may read a sample.
type Source struct {
	kind   Kind
	params []chunkParams // Realistic: one entry; Mimic: one per profile chunk
}

// New validates spec and resolves its knobs.
func New(spec Spec) (*Source, error) {
	switch spec.Kind {
	case Zeros, Random:
		return &Source{kind: spec.Kind}, nil
	case Realistic:
		if spec.Ratio < 1 || spec.Ratio > MaxRatio {
			return nil, fmt.Errorf("datagen: ratio %g out of range [1, %g]", spec.Ratio, MaxRatio)
		}
		return &Source{kind: Realistic, params: []chunkParams{paramsForRatio(spec.Ratio, newVocabulary())}}, nil
	case Mimic:
		p := spec.Profile
		if p == nil {
			if spec.Sample == "" {
				return nil, fmt.Errorf("datagen: mimic needs a sample file or a profile")
			}
			var err error
			if p, err = ProfileFile(spec.Sample); err != nil {
				return nil, err
			}
		}
		if len(p.Chunks) == 0 {
			return nil, fmt.Errorf("datagen: empty mimic profile")
		}
		params := make([]chunkParams, len(p.Chunks))
		vocab := newVocabulary()
		for i, r := range p.Chunks {
			params[i] = paramsForRatio(r, vocab)
		}
		return &Source{kind: Mimic, params: params}, nil
	case "":
		return nil, fmt.Errorf("datagen: no kind given (zeros, random, realistic, mimic)")
	}
	return nil, fmt.Errorf("datagen: unknown kind %q", spec.Kind)
}

// Kind is the content model.
func (s *Source) Kind() Kind { return s.kind }

// NewReader returns a reader of exactly size bytes of content, determined
// by seed. Objects with different seeds share no content, so neither
// compression across objects nor deduplication can profit from them.
func (s *Source) NewReader(seed uint64, size int64) *Reader {
	return &Reader{src: s, seed: seed, size: size}
}

// Fill writes the first len(p) bytes of the object seed into p.
func (s *Source) Fill(seed uint64, p []byte) {
	for i := 0; len(p) > 0; i++ {
		n := min(len(p), ChunkSize)
		s.chunk(seed, uint64(i), p[:n])
		p = p[n:]
	}
}

// chunk generates the first len(dst) bytes of chunk idx of object seed.
func (s *Source) chunk(seed, idx uint64, dst []byte) {
	r := rng{s: mix(seed, idx)}
	switch s.kind {
	case Zeros:
		clear(dst)
	case Random:
		r.fill(dst)
	default:
		p := &s.params[idx%uint64(len(s.params))]
		p.generate(&r, dst)
	}
}

// Reader streams one generated object.
type Reader struct {
	src  *Source
	seed uint64
	size int64
	off  int64
	buf  []byte // the current chunk's generated prefix
	bufO int64  // object offset of buf[0]
}

var _ io.Reader = (*Reader)(nil)

// Size is the object's length.
func (r *Reader) Size() int64 { return r.size }

// Read implements io.Reader.
func (r *Reader) Read(p []byte) (int, error) {
	if r.off >= r.size {
		return 0, io.EOF
	}
	total := 0
	for len(p) > 0 && r.off < r.size {
		idx := r.off / ChunkSize
		within := r.off % ChunkSize
		chunkLen := min(int64(ChunkSize), r.size-idx*ChunkSize)
		// A whole chunk that fits in p is generated in place: no copy.
		if within == 0 && int64(len(p)) >= chunkLen {
			r.src.chunk(r.seed, uint64(idx), p[:chunkLen])
			p = p[chunkLen:]
			r.off += chunkLen
			total += int(chunkLen)
			continue
		}
		if r.buf == nil || r.bufO != idx*ChunkSize {
			if r.buf == nil {
				r.buf = make([]byte, ChunkSize)
			}
			r.buf = r.buf[:chunkLen]
			r.src.chunk(r.seed, uint64(idx), r.buf)
			r.bufO = idx * ChunkSize
		}
		n := copy(p, r.buf[within:])
		p = p[n:]
		r.off += int64(n)
		total += n
	}
	return total, nil
}

// rng is wyrand: tiny state, 8 bytes per step, fast enough that content
// generation is never the benchmark's bottleneck. Not for cryptography.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(r.s, r.s^0xe7037ed1a0b428db)
	return hi ^ lo
}

// below returns a value in [0, n).
func (r *rng) below(n uint64) uint64 {
	hi, _ := bits.Mul64(r.next(), n)
	return hi
}

func (r *rng) fill(dst []byte) {
	for len(dst) >= 8 {
		binary.LittleEndian.PutUint64(dst, r.next())
		dst = dst[8:]
	}
	if len(dst) > 0 {
		var tail [8]byte
		binary.LittleEndian.PutUint64(tail[:], r.next())
		copy(dst, tail[:])
	}
}

// mix derives a chunk's stream from the object seed and chunk index
// (splitmix64 finaliser), so chunks are independent and seekable.
func mix(seed, idx uint64) uint64 {
	z := seed ^ (idx+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
