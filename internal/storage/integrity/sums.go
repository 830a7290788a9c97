// Package integrity owns the end-to-end checksums of stored bytes: a
// storage.Backend decorator that computes a CRC32C per fixed block of
// every object (and part) as it is written, records the list in the
// object's system metadata beside the reverse plan, and verifies each
// block before any of its bytes leave a GET, so a damaged stored byte
// ends the answer with an error instead of being served. The scrubber
// (scrub.go) reads objects through the same check to find damage before
// a client does.
package integrity

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Key is the system-metadata key (storage.ObjectMeta.System) that holds
// an object's checksums.
const Key = "facet.crc32c"

// BlockSize is the span each checksum covers. A Range GET reads whole
// blocks (at most two more than it needs), and the list costs 4 bytes per
// block in the object's record: 256 KiB keeps a 5 GiB object's list at
// 80 KiB and a small range's extra read under a millisecond.
const BlockSize = 256 << 10

const sumsVersion = 1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Segment is one separately written span of an object's stored stream: the
// whole of a simple object, or one part of a multipart object.
type Segment struct {
	Size int64
	// CRC is the CRC32C of the whole segment; Blocks of each BlockSize
	// span of it (the last may be short).
	CRC    uint32
	Blocks []uint32
}

// Sums are an object's checksums: its segments in stored order, each
// starting at a block boundary of its own.
type Sums struct {
	Block    int64
	Segments []Segment
}

// Size is the stored length the sums describe.
func (s *Sums) Size() int64 {
	var n int64
	for _, g := range s.Segments {
		n += g.Size
	}
	return n
}

// blocksIn is how many blocks of size b a segment of n bytes has.
func blocksIn(n, b int64) int64 { return (n + b - 1) / b }

// Encode renders the sums for the system metadata: base64 of a version
// byte, the block size and, per segment, its size, CRC and block CRCs.
func (s *Sums) Encode() string {
	n := 2 + 2*binary.MaxVarintLen64
	for _, g := range s.Segments {
		n += binary.MaxVarintLen64 + 4 + 4*len(g.Blocks)
	}
	b := make([]byte, 0, n)
	b = append(b, sumsVersion)
	b = binary.AppendUvarint(b, uint64(s.Block))
	b = binary.AppendUvarint(b, uint64(len(s.Segments)))
	for _, g := range s.Segments {
		b = binary.AppendUvarint(b, uint64(g.Size))
		b = binary.BigEndian.AppendUint32(b, g.CRC)
		for _, c := range g.Blocks {
			b = binary.BigEndian.AppendUint32(b, c)
		}
	}
	return base64.RawStdEncoding.EncodeToString(b)
}

// ErrBadSums reports system metadata that does not decode as sums.
var ErrBadSums = errors.New("integrity: malformed checksum record")

// Decode parses what Encode renders. It trusts nothing: sizes and counts
// are checked against the bytes present before anything is allocated.
func Decode(v string) (*Sums, error) {
	b, err := base64.RawStdEncoding.DecodeString(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSums, err)
	}
	if len(b) == 0 || b[0] != sumsVersion {
		return nil, fmt.Errorf("%w: unknown version", ErrBadSums)
	}
	b = b[1:]
	next := func() (uint64, bool) {
		x, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return x, true
	}
	block, ok := next()
	if !ok || block == 0 || block > 1<<30 {
		return nil, fmt.Errorf("%w: block size", ErrBadSums)
	}
	nseg, ok := next()
	// Each segment takes at least 5 bytes.
	if !ok || nseg > uint64(len(b))/5 {
		return nil, fmt.Errorf("%w: segment count", ErrBadSums)
	}
	s := &Sums{Block: int64(block), Segments: make([]Segment, nseg)}
	for i := range s.Segments {
		size, ok := next()
		if !ok || size > 1<<62 || len(b) < 4 {
			return nil, fmt.Errorf("%w: segment %d", ErrBadSums, i)
		}
		nb := blocksIn(int64(size), int64(block))
		if uint64(len(b)-4)/4 < uint64(nb) {
			return nil, fmt.Errorf("%w: segment %d: %d blocks, %d bytes", ErrBadSums, i, nb, len(b)-4)
		}
		g := Segment{Size: int64(size), CRC: binary.BigEndian.Uint32(b), Blocks: make([]uint32, nb)}
		b = b[4:]
		for j := range g.Blocks {
			g.Blocks[j] = binary.BigEndian.Uint32(b)
			b = b[4:]
		}
		s.Segments[i] = g
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrBadSums, len(b))
	}
	return s, nil
}

// Of returns the sums recorded in system metadata, nil when the object
// has none (written before checksums were kept).
func Of(system map[string]string) (*Sums, error) {
	v, ok := system[Key]
	if !ok {
		return nil, nil
	}
	return Decode(v)
}

// blockAt locates the block holding stored offset off: its start, its
// length and its checksum. ok is false past the end.
func (s *Sums) blockAt(off int64) (start, n int64, crc uint32, ok bool) {
	var base int64
	for _, g := range s.Segments {
		if off < base+g.Size {
			i := (off - base) / s.Block
			start = base + i*s.Block
			return start, min(s.Block, base+g.Size-start), g.Blocks[i], true
		}
		base += g.Size
	}
	return 0, 0, 0, false
}

// hasher computes the sums of one segment as its bytes pass.
type hasher struct {
	block   int64
	seg     Segment
	cur     uint32 // CRC of the block being filled
	inBlock int64
}

func newHasher() *hasher { return &hasher{block: BlockSize} }

func (h *hasher) Write(p []byte) (int, error) {
	n := len(p)
	h.seg.CRC = crc32.Update(h.seg.CRC, castagnoli, p)
	for len(p) > 0 {
		take := min(int64(len(p)), h.block-h.inBlock)
		h.cur = crc32.Update(h.cur, castagnoli, p[:take])
		h.inBlock += take
		h.seg.Size += take
		p = p[take:]
		if h.inBlock == h.block {
			h.seg.Blocks = append(h.seg.Blocks, h.cur)
			h.cur, h.inBlock = 0, 0
		}
	}
	return n, nil
}

// sums returns what was written as one segment.
func (h *hasher) sums() *Sums {
	seg := h.seg
	if h.inBlock > 0 {
		seg.Blocks = append(seg.Blocks[:len(seg.Blocks):len(seg.Blocks)], h.cur)
	}
	return &Sums{Block: h.block, Segments: []Segment{seg}}
}
