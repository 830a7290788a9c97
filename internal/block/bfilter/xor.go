package bfilter

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/facet-sds/facet/internal/filter"
)

func xorInfo() *Info {
	return &Info{Name: "xor", Version: 1, Align: 1,
		Params: []filter.ParamSpec{{Name: "key", Type: filter.TypeString, Default: "0x55",
			Doc: "the byte every data byte is XORed with: 0x00-0xff or 0-255"}},
		Doc:    "XORs every byte with a key byte (the sources' obfuscation filter); its own inverse",
		Config: func() Provisioner { return &xorConfig{} }}
}

// xorConfig is the xor filter's parameters, decoded.
type xorConfig struct {
	Key string `param:"key"`
}

var (
	_ filter.Validator = (*xorConfig)(nil)
	_ Provisioner      = (*xorConfig)(nil)
)

// Validate checks that the key is one byte, which a string parameter
// cannot say.
func (c *xorConfig) Validate() error {
	if _, err := parseKeyByte(c.Key); err != nil {
		return &filter.ParamError{Param: "key", Msg: err.Error()}
	}
	return nil
}

func (c *xorConfig) Provision(Env) (Filter, error) {
	k, err := parseKeyByte(c.Key)
	if err != nil {
		return nil, err
	}
	return newXor(k), nil
}

func parseKeyByte(s string) (byte, error) {
	if s == "" {
		return 0x55, nil
	}
	base, digits := 10, s
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		base, digits = 16, h
	}
	v, err := strconv.ParseUint(digits, base, 8)
	if err != nil {
		return 0, fmt.Errorf("xor key %q: want one byte, 0x00-0xff or 0-255", s)
	}
	return byte(v), nil
}

type xor struct{ word uint64 }

func newXor(k byte) *xor { return &xor{word: 0x0101010101010101 * uint64(k)} }

func (x *xor) apply(b []byte) {
	// Eight bytes at a time: the key is the same byte everywhere.
	i := 0
	for ; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], binary.LittleEndian.Uint64(b[i:])^x.word)
	}
	for ; i < len(b); i++ {
		b[i] ^= byte(x.word)
	}
}

func (x *xor) Encode(_ int64, b []byte) error { x.apply(b); return nil }
func (x *xor) Decode(_ int64, b []byte) error { x.apply(b); return nil }
