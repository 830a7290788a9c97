package wasm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
)

// coalesceData rewrites a module whose data section holds many small
// active segments into one with few: Go's linker emits tens of thousands
// (30,575 for the noop example), and wazero evaluates each segment's offset
// and copies it on every instantiation, which was most of a Go filter's
// start. Segments closer than maxDataGap are joined, the gap filled with
// the zeros memory holds there anyway, so the instance's initial memory is
// byte for byte the same.
//
// It returns code unchanged when the module is anything but plain: a
// segment that is passive, targets another memory or has an offset other
// than an i32.const, segments that overlap, or code that may refer to
// segments by index (memory.init, data.drop). It never fails: malformed
// input is returned as is, for the compiler to refuse.
func coalesceData(code []byte) []byte {
	out, err := coalesce(code)
	if err != nil {
		return code
	}
	return out
}

const maxDataGap = 4 << 10

var errNotPlain = errors.New("not a plain module")

type segment struct {
	off  uint32
	data []byte
}

// plainModule is a module whose data is only active segments of memory
// 0 at constant offsets, which no code refers to by index: its data
// segments can be rewritten (coalesced, or moved into a memory image)
// without changing what an instance starts with.
type plainModule struct {
	code                                    []byte
	secs                                    []section
	dataIdx, countIdx, codeIdx, memIdx, imp int
	segs                                    []segment // sorted by offset, not overlapping
}

type section struct {
	id         byte
	start, end int // content
	hdr        int // section start (id byte)
}

func parsePlain(code []byte) (*plainModule, error) {
	if len(code) < 8 || !bytes.Equal(code[:4], []byte("\x00asm")) || binary.LittleEndian.Uint32(code[4:8]) != 1 {
		return nil, errNotPlain
	}
	p := &plainModule{code: code, dataIdx: -1, countIdx: -1, codeIdx: -1, memIdx: -1, imp: -1}
	for i := 8; i < len(code); {
		id := code[i]
		size, n := uleb(code[i+1:])
		if n == 0 || size > uint64(len(code)-i-1-n) {
			return nil, errNotPlain
		}
		s := section{id: id, hdr: i, start: i + 1 + n, end: i + 1 + n + int(size)}
		switch id {
		case 2:
			p.imp = len(p.secs)
		case 5:
			p.memIdx = len(p.secs)
		case 10:
			p.codeIdx = len(p.secs)
		case 11:
			p.dataIdx = len(p.secs)
		case 12:
			p.countIdx = len(p.secs)
		}
		p.secs = append(p.secs, s)
		i = s.end
	}
	if p.dataIdx < 0 {
		return nil, errNotPlain
	}
	if p.countIdx >= 0 && p.codeIdx >= 0 {
		c := code[p.secs[p.codeIdx].start:p.secs[p.codeIdx].end]
		// memory.init is 0xFC 8, data.drop 0xFC 9: a byte match may be an
		// immediate instead, which only costs the optimisation.
		if bytes.Contains(c, []byte{0xfc, 0x08}) || bytes.Contains(c, []byte{0xfc, 0x09}) {
			return nil, errNotPlain
		}
	}
	d := code[p.secs[p.dataIdx].start:p.secs[p.dataIdx].end]
	count, n := uleb(d)
	if n == 0 || count > uint64(len(d)) {
		return nil, errNotPlain
	}
	d = d[n:]
	p.segs = make([]segment, 0, count)
	for range count {
		flags, n := uleb(d)
		if n == 0 || flags != 0 || len(d) < n+1 || d[n] != 0x41 { // active, memory 0, i32.const
			return nil, errNotPlain
		}
		d = d[n+1:]
		off, n := sleb32(d)
		if n == 0 || off < 0 || len(d) < n+1 || d[n] != 0x0b {
			return nil, errNotPlain
		}
		d = d[n+1:]
		size, n := uleb(d)
		if n == 0 || size > uint64(len(d)-n) || uint64(off)+size > 1<<32 {
			return nil, errNotPlain
		}
		p.segs = append(p.segs, segment{off: uint32(off), data: d[n : n+int(size)]})
		d = d[n+int(size):]
	}
	if len(d) != 0 {
		return nil, errNotPlain
	}
	slices.SortStableFunc(p.segs, func(a, b segment) int { return int(int64(a.off) - int64(b.off)) })
	for i := 1; i < len(p.segs); i++ {
		if prev := p.segs[i-1]; uint64(p.segs[i].off) < uint64(prev.off)+uint64(len(prev.data)) {
			return nil, errNotPlain // overlap: order would matter
		}
	}
	return p, nil
}

func coalesce(code []byte) ([]byte, error) {
	p, err := parsePlain(code)
	if err != nil {
		return nil, err
	}
	var merged []segment
	for _, s := range p.segs {
		if len(merged) > 0 {
			last := &merged[len(merged)-1]
			end := uint64(last.off) + uint64(len(last.data))
			if uint64(s.off)-end <= maxDataGap {
				last.data = append(last.data, make([]byte, uint64(s.off)-end)...)
				last.data = append(last.data, s.data...)
				continue
			}
		}
		merged = append(merged, segment{off: s.off, data: slices.Clone(s.data)})
	}
	if len(merged) == len(p.segs) {
		return nil, errNotPlain // nothing gained
	}
	return p.rewrite(merged), nil
}

// rewrite returns the module with segs as its data segments.
func (p *plainModule) rewrite(segs []segment) []byte {
	var body []byte
	body = binary.AppendUvarint(body, uint64(len(segs)))
	for _, s := range segs {
		body = append(body, 0x00, 0x41)
		body = appendSleb(body, int64(s.off))
		body = append(body, 0x0b)
		body = binary.AppendUvarint(body, uint64(len(s.data)))
		body = append(body, s.data...)
	}
	out := make([]byte, 0, len(p.code))
	out = append(out, p.code[:8]...)
	for i, s := range p.secs {
		switch i {
		case p.dataIdx:
			out = append(out, 11)
			out = binary.AppendUvarint(out, uint64(len(body)))
			out = append(out, body...)
		case p.countIdx:
			var c []byte
			c = binary.AppendUvarint(c, uint64(len(segs)))
			out = append(out, 12)
			out = binary.AppendUvarint(out, uint64(len(c)))
			out = append(out, c...)
		default:
			out = append(out, p.code[s.hdr:s.end]...)
		}
	}
	return out
}

// splitData returns the module without its data segments and the image
// of the memory they initialise (from offset 0, whole pages of pageSize),
// for an instance to start from a copy-on-write mapping of the image
// instead of wazero copying the segments into fresh memory. It refuses
// (errNotPlain) a module that imports its memory, has more than one, or
// whose segments reach past its initial memory: wazero would have refused
// to instantiate it, which with the segments gone it could no longer see.
func splitData(code []byte, pageSize int) (stripped, image []byte, err error) {
	p, err := parsePlain(code)
	if err != nil {
		return nil, nil, err
	}
	if p.memIdx < 0 || len(p.segs) == 0 || p.importsMemory() {
		return nil, nil, errNotPlain
	}
	m := code[p.secs[p.memIdx].start:p.secs[p.memIdx].end]
	count, n := uleb(m)
	if n == 0 || count != 1 || len(m) < n+1 || m[n] > 1 { // one memory, not shared, not 64-bit
		return nil, nil, errNotPlain
	}
	minPages, k := uleb(m[n+1:])
	if k == 0 {
		return nil, nil, errNotPlain
	}
	last := p.segs[len(p.segs)-1]
	end := uint64(last.off) + uint64(len(last.data))
	if end > minPages*65536 || end > 1<<30 {
		return nil, nil, errNotPlain
	}
	size := (end + uint64(pageSize) - 1) / uint64(pageSize) * uint64(pageSize)
	image = make([]byte, size)
	for _, s := range p.segs {
		copy(image[s.off:], s.data)
	}
	return p.rewrite(nil), image, nil
}

// importsMemory reports whether the import section imports a memory
// (import kind 2). A malformed section counts as importing one.
func (p *plainModule) importsMemory() bool {
	if p.imp < 0 {
		return false
	}
	d := p.code[p.secs[p.imp].start:p.secs[p.imp].end]
	count, n := uleb(d)
	if n == 0 {
		return true
	}
	d = d[n:]
	for range count {
		for range 2 { // module and field names
			l, n := uleb(d)
			if n == 0 || uint64(len(d)-n) < l {
				return true
			}
			d = d[n+int(l):]
		}
		if len(d) < 1 {
			return true
		}
		kind := d[0]
		d = d[1:]
		switch kind {
		case 0: // func: type index
			_, n := uleb(d)
			if n == 0 {
				return true
			}
			d = d[n:]
		case 1: // table: reftype, limits
			if len(d) < 1 {
				return true
			}
			d = d[1:]
			if d = skipLimits(d); d == nil {
				return true
			}
		case 3: // global: valtype, mutability
			if len(d) < 2 {
				return true
			}
			d = d[2:]
		default: // 2: memory; anything else is unknown
			return true
		}
	}
	return false
}

func skipLimits(d []byte) []byte {
	if len(d) < 1 || d[0] > 1 {
		return nil
	}
	hasMax := d[0] == 1
	d = d[1:]
	_, n := uleb(d)
	if n == 0 {
		return nil
	}
	d = d[n:]
	if hasMax {
		if _, n = uleb(d); n == 0 {
			return nil
		}
		d = d[n:]
	}
	return d
}

// uleb reads an unsigned LEB128 of at most 5 bytes (a u32); n is 0 when
// it is malformed.
func uleb(b []byte) (v uint64, n int) {
	for i := 0; i < len(b) && i < 5; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			if v > 1<<32-1 {
				return 0, 0
			}
			return v, i + 1
		}
	}
	return 0, 0
}

// sleb32 reads a signed LEB128 i32; n is 0 when it is malformed.
func sleb32(b []byte) (v int64, n int) {
	var shift uint
	for i := 0; i < len(b) && i < 5; i++ {
		v |= int64(b[i]&0x7f) << shift
		shift += 7
		if b[i] < 0x80 {
			if b[i]&0x40 != 0 {
				v -= 1 << shift
			}
			if v < -1<<31 || v > 1<<31-1 {
				return 0, 0
			}
			return v, i + 1
		}
	}
	return 0, 0
}

func appendSleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
