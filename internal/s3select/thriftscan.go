package s3select

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Parquet's metadata (the footer, each page header) is Thrift's compact
// encoding, and parquet-go's decoder trusts what it declares: a list's
// length is allocated before its first element is read (a 25-byte footer
// declaring 2^31 row groups asked for 206 GB and killed the process), and
// nesting is followed by recursion. scanThrift walks an encoded struct
// without decoding it, and refuses one whose lists could not be in its
// bytes, that nests deeper than thriftMaxDepth, or whose lists would cost
// more than a budget decoded.
const (
	thriftMaxDepth = 64
	// Decoded cost of a list element: a struct of Parquet's metadata is
	// at most ~560 bytes in parquet-go (a ColumnChunk); a string, binary
	// or list a slice header; a number 8 bytes.
	thriftCostStruct = 640
	thriftCostSlice  = 24
	thriftCostScalar = 8
)

// Compact protocol types.
const (
	tBoolTrue  = 1
	tBoolFalse = 2
	tByte      = 3
	tI16       = 4
	tI32       = 5
	tI64       = 6
	tDouble    = 7
	tBinary    = 8
	tList      = 9
	tSet       = 10
	tMap       = 11
	tStruct    = 12
)

// errThriftShort is an encoding that ends before its struct does: more
// bytes may complete it.
var errThriftShort = errors.New("thrift: truncated")

type thriftScan struct {
	b      []byte
	pos    int
	budget int64
}

// scanThrift walks the struct at the start of b and returns its length.
// It returns errThriftShort when b ends inside it, and another error
// when it is malformed, too deep or its lists cost more than budget.
func scanThrift(b []byte, budget int64) (int, error) {
	s := &thriftScan{b: b, budget: budget}
	if err := s.structure(0); err != nil {
		return 0, err
	}
	return s.pos, nil
}

func (s *thriftScan) byte() (byte, error) {
	if s.pos >= len(s.b) {
		return 0, errThriftShort
	}
	c := s.b[s.pos]
	s.pos++
	return c, nil
}

func (s *thriftScan) uvarint() (uint64, error) {
	v, n := binary.Uvarint(s.b[s.pos:])
	switch {
	case n == 0:
		return 0, errThriftShort
	case n < 0:
		return 0, fmt.Errorf("thrift: varint overflows at byte %d", s.pos)
	}
	s.pos += n
	return v, nil
}

func (s *thriftScan) skip(n uint64) error {
	if n > uint64(len(s.b)-s.pos) {
		return errThriftShort
	}
	s.pos += int(n)
	return nil
}

func (s *thriftScan) structure(depth int) error {
	if depth >= thriftMaxDepth {
		return fmt.Errorf("thrift: nested deeper than %d", thriftMaxDepth)
	}
	for {
		h, err := s.byte()
		if err != nil {
			return err
		}
		if h == 0 {
			return nil
		}
		if h>>4 == 0 {
			// A long-form field id follows.
			if _, err := s.uvarint(); err != nil {
				return err
			}
		}
		if t := h & 0x0F; t != tBoolTrue && t != tBoolFalse {
			if err := s.value(t, depth+1); err != nil {
				return err
			}
		}
	}
}

func (s *thriftScan) value(t byte, depth int) error {
	switch t {
	case tBoolTrue, tBoolFalse, tByte:
		return s.skip(1)
	case tI16, tI32, tI64:
		_, err := s.uvarint()
		return err
	case tDouble:
		return s.skip(8)
	case tBinary:
		n, err := s.uvarint()
		if err != nil {
			return err
		}
		return s.skip(n)
	case tList, tSet:
		h, err := s.byte()
		if err != nil {
			return err
		}
		n, et := uint64(h>>4), h&0x0F
		if n == 15 {
			if n, err = s.uvarint(); err != nil {
				return err
			}
		}
		return s.elements(n, et, depth)
	case tMap:
		n, err := s.uvarint()
		if err != nil || n == 0 {
			return err
		}
		kv, err := s.byte()
		if err != nil {
			return err
		}
		if n > uint64(len(s.b)-s.pos)/2+1 {
			return s.tooMany(n)
		}
		if err := s.charge(2*n, thriftCostSlice); err != nil {
			return err
		}
		for range n {
			if err := s.value(kv>>4, depth+1); err != nil {
				return err
			}
			if err := s.value(kv&0x0F, depth+1); err != nil {
				return err
			}
		}
		return nil
	case tStruct:
		return s.structure(depth)
	}
	return fmt.Errorf("thrift: unknown type %d at byte %d", t, s.pos)
}

// elements walks n list elements of type et: every element takes a byte
// at least, so a list longer than what is left cannot be complete.
func (s *thriftScan) elements(n uint64, et byte, depth int) error {
	if n > uint64(len(s.b)-s.pos) {
		return s.tooMany(n)
	}
	cost := int64(thriftCostScalar)
	switch et {
	case tStruct:
		cost = thriftCostStruct
	case tBinary, tList, tSet, tMap:
		cost = thriftCostSlice
	}
	if err := s.charge(n, cost); err != nil {
		return err
	}
	for range n {
		if err := s.value(et, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// tooMany reports a list longer than the bytes left: truncated when more
// bytes could hold it, which the caller bounds.
func (s *thriftScan) tooMany(n uint64) error {
	return fmt.Errorf("%w: a list of %d elements at byte %d, %d bytes left", errThriftShort, n, s.pos, len(s.b)-s.pos)
}

func (s *thriftScan) charge(n uint64, cost int64) error {
	if n > uint64(s.budget/cost) {
		return fmt.Errorf("thrift: lists would cost more than %d bytes decoded", s.budget)
	}
	s.budget -= int64(n) * cost
	return nil
}
