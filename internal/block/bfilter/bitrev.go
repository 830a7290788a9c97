package bfilter

import (
	"math/bits"
)

func bitrevInfo() *Info {
	return &Info{Name: "bitrev", Version: 1, Align: 1,
		Doc: "reverses the bit order of every byte; its own inverse",
		Config: func() Provisioner {
			return ProvisionFunc(func(Env) (Filter, error) { return bitrev{}, nil })
		}}
}

type bitrev struct{}

func (bitrev) apply(b []byte) {
	for i, c := range b {
		b[i] = bits.Reverse8(c)
	}
}

func (r bitrev) Encode(_ int64, b []byte) error { r.apply(b); return nil }
func (r bitrev) Decode(_ int64, b []byte) error { r.apply(b); return nil }
