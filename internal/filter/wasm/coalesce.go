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

func coalesce(code []byte) ([]byte, error) {
	if len(code) < 8 || !bytes.Equal(code[:4], []byte("\x00asm")) || binary.LittleEndian.Uint32(code[4:8]) != 1 {
		return nil, errNotPlain
	}
	type section struct {
		id         byte
		start, end int // content
		hdr        int // section start (id byte)
	}
	var secs []section
	dataIdx, countIdx, codeIdx := -1, -1, -1
	for i := 8; i < len(code); {
		id := code[i]
		size, n := uleb(code[i+1:])
		if n == 0 || size > uint64(len(code)-i-1-n) {
			return nil, errNotPlain
		}
		s := section{id: id, hdr: i, start: i + 1 + n, end: i + 1 + n + int(size)}
		switch id {
		case 10:
			codeIdx = len(secs)
		case 11:
			dataIdx = len(secs)
		case 12:
			countIdx = len(secs)
		}
		secs = append(secs, s)
		i = s.end
	}
	if dataIdx < 0 {
		return nil, errNotPlain
	}
	if countIdx >= 0 && codeIdx >= 0 {
		c := code[secs[codeIdx].start:secs[codeIdx].end]
		// memory.init is 0xFC 8, data.drop 0xFC 9: a byte match may be an
		// immediate instead, which only costs the optimisation.
		if bytes.Contains(c, []byte{0xfc, 0x08}) || bytes.Contains(c, []byte{0xfc, 0x09}) {
			return nil, errNotPlain
		}
	}
	d := code[secs[dataIdx].start:secs[dataIdx].end]
	count, n := uleb(d)
	if n == 0 || count > uint64(len(d)) {
		return nil, errNotPlain
	}
	d = d[n:]
	segs := make([]segment, 0, count)
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
		segs = append(segs, segment{off: uint32(off), data: d[n : n+int(size)]})
		d = d[n+int(size):]
	}
	if len(d) != 0 {
		return nil, errNotPlain
	}
	slices.SortStableFunc(segs, func(a, b segment) int { return int(int64(a.off) - int64(b.off)) })
	var merged []segment
	for _, s := range segs {
		if len(merged) > 0 {
			last := &merged[len(merged)-1]
			end := uint64(last.off) + uint64(len(last.data))
			switch {
			case uint64(s.off) < end:
				return nil, errNotPlain // overlap: order would matter
			case uint64(s.off)-end <= maxDataGap:
				last.data = append(last.data, make([]byte, uint64(s.off)-end)...)
				last.data = append(last.data, s.data...)
				continue
			}
		}
		merged = append(merged, segment{off: s.off, data: slices.Clone(s.data)})
	}
	if len(merged) == len(segs) {
		return nil, errNotPlain // nothing gained
	}
	var body []byte
	body = binary.AppendUvarint(body, uint64(len(merged)))
	for _, s := range merged {
		body = append(body, 0x00, 0x41)
		body = appendSleb(body, int64(s.off))
		body = append(body, 0x0b)
		body = binary.AppendUvarint(body, uint64(len(s.data)))
		body = append(body, s.data...)
	}
	out := make([]byte, 0, len(code))
	out = append(out, code[:8]...)
	for i, s := range secs {
		switch i {
		case dataIdx:
			out = append(out, 11)
			out = binary.AppendUvarint(out, uint64(len(body)))
			out = append(out, body...)
		case countIdx:
			var c []byte
			c = binary.AppendUvarint(c, uint64(len(merged)))
			out = append(out, 12)
			out = binary.AppendUvarint(out, uint64(len(c)))
			out = append(out, c...)
		default:
			out = append(out, code[s.hdr:s.end]...)
		}
	}
	return out, nil
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
