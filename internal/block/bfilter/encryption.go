package bfilter

import (
	"crypto/aes"
	"errors"
	"fmt"

	"golang.org/x/crypto/xts"

	"github.com/facet-sds/facet/internal/filter"
)

// SectorSize is the unit AES-XTS encrypts: its tweak is the sector
// number, so any sector can be read or written alone.
const SectorSize = 512

func encryptionInfo() *Info {
	return &Info{Name: "encryption", Version: 1, Align: SectorSize,
		Doc: "AES-256-XTS per 512-byte sector, with a per-volume key derived from the server's master key; no integrity (length-preserving)",
		New: func(_ filter.Params, env Env) (Filter, error) {
			if env.Key == nil {
				return nil, errors.New("encryption: no master key to derive the volume key from")
			}
			k, err := env.Key()
			if err != nil {
				return nil, fmt.Errorf("encryption: volume key: %w", err)
			}
			c, err := xts.NewCipher(aes.NewCipher, k)
			if err != nil {
				return nil, fmt.Errorf("encryption: %w", err)
			}
			return &xtsFilter{c: c}, nil
		}}
}

type xtsFilter struct{ c *xts.Cipher }

func (x *xtsFilter) check(off int64, b []byte) error {
	if off%SectorSize != 0 || len(b)%SectorSize != 0 {
		return fmt.Errorf("encryption: range %d+%d not aligned to %d-byte sectors", off, len(b), SectorSize)
	}
	return nil
}

func (x *xtsFilter) Encode(off int64, b []byte) error {
	if err := x.check(off, b); err != nil {
		return err
	}
	for i := 0; i < len(b); i += SectorSize {
		s := b[i : i+SectorSize]
		x.c.Encrypt(s, s, uint64(off+int64(i))/SectorSize)
	}
	return nil
}

func (x *xtsFilter) Decode(off int64, b []byte) error {
	if err := x.check(off, b); err != nil {
		return err
	}
	for i := 0; i < len(b); i += SectorSize {
		s := b[i : i+SectorSize]
		x.c.Decrypt(s, s, uint64(off+int64(i))/SectorSize)
	}
	return nil
}
