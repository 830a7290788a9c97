package bfilter

import (
	"testing"

	"github.com/facet-sds/facet/internal/filter"
)

// BenchmarkFilters: cost per MiB of each block filter, encode side.
func BenchmarkFilters(b *testing.B) {
	for _, name := range []string{"nop", "xor", "bitrev", "encryption"} {
		b.Run(name, func(b *testing.B) {
			t := &testing.T{}
			f := build(t, name, filter.Params{"key": "0x55"})
			buf := make([]byte, 1<<20)
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				f.Encode(0, buf)
			}
		})
	}
}
