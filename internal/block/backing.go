package block

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/facet-sds/facet/internal/meta"
)

// backing is a volume's bytes: one sparse file per stripe member. Byte
// off of the volume lives in member (off/unit) mod width, at
// ((off/unit) div width)*unit + off mod unit; with one member the file is
// the volume.
type backing struct {
	files []*os.File
	gates []flowGate // each member's pool queue
	unit  int64
}

// memberPath is where a volume's member i lives.
func memberPath(dir string, v meta.Volume, i int) string {
	return filepath.Join(dir, fmt.Sprintf("%s-%s.%d.img", v.Name, v.ID, i))
}

func openBacking(v meta.Volume, pools map[string]meta.Pool, gates func(pool string) flowGate, create bool) (*backing, error) {
	b := &backing{unit: StripeUnit}
	if len(v.Extents) == 1 {
		b.unit = v.Size
	}
	for i, e := range v.Extents {
		p, ok := pools[e.Pool]
		if !ok {
			b.close()
			return nil, fmt.Errorf("volume %s: pool %s: %w", v.Name, e.Pool, meta.ErrPoolNotFound)
		}
		if err := os.MkdirAll(p.Dir, 0o700); err != nil {
			b.close()
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		f, err := openMember(memberPath(p.Dir, v, i), create)
		if err != nil {
			b.close()
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		b.files = append(b.files, f)
		b.gates = append(b.gates, gates(e.Pool))
		if err := f.Truncate(e.Capacity); err != nil { // sparse: no blocks until written
			b.close()
			return nil, fmt.Errorf("volume %s: size member %d: %w", v.Name, i, err)
		}
	}
	return b, nil
}

// openMember opens a member file, creating it when create is set. A new
// file's directory entry is made durable at once: FLUSH fsyncs the file,
// which does not cover the entry, and data acknowledged after a FLUSH must
// not vanish with a file that a power cut unlinks.
func openMember(path string, create bool) (*os.File, error) {
	if !create {
		return os.OpenFile(path, os.O_RDWR, 0o600)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return os.OpenFile(path, os.O_RDWR, 0o600)
	}
	if err != nil {
		return nil, err
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		f.Close()
		return nil, fmt.Errorf("sync pool directory: %w", err)
	}
	return f, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (b *backing) close() error {
	var errs []error
	for _, f := range b.files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// each calls fn for every member piece of the volume range [off, off+n).
func (b *backing) each(off, n int64, fn func(m int, moff int64, lo, hi int64) error) error {
	w := int64(len(b.files))
	for n > 0 {
		i := off / b.unit
		in := off % b.unit
		take := min(n, b.unit-in)
		m := int(i % w)
		moff := (i/w)*b.unit + in
		if err := fn(m, moff, 0, take); err != nil {
			return err
		}
		off += take
		n -= take
	}
	return nil
}

func (b *backing) readAt(ctx context.Context, p []byte, off int64) error {
	return b.io(ctx, p, off, (*os.File).ReadAt)
}

func (b *backing) writeAt(ctx context.Context, p []byte, off int64) error {
	return b.io(ctx, p, off, writePieces)
}

// writeMax bounds one pwrite to a member file. The page cache sizes the
// folio that a write creates by the write's length (ext4 with large
// folios), and every later write into that folio walks all of its
// buffer heads: after a volume was filled with 1 MiB writes, 4 KiB random
// writes into it spent half their CPU in ext4_block_write_begin. Writing
// at most 256 KiB at a time keeps the folios small enough: 4 KiB random
// writes after a 1 MiB fill went from ~0.9x to 2.0-2.7x nbdkit (which
// writes 1 MiB at once), and 1 MiB writes lost nothing (1.17x; 64 KiB
// pieces cost them 6-15%). docs/benchmarks/nbd.md and its archive have the runs.
const writeMax = 256 << 10

// writePieces writes p at off in pieces of at most writeMax.
func writePieces(f *os.File, p []byte, off int64) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), writeMax)
		w, err := f.WriteAt(p[:k], off)
		n += w
		if err != nil {
			return n, err
		}
		p, off = p[k:], off+int64(k)
	}
	return n, nil
}

// io runs op on each member piece of p, each through its pool's queue at
// that pool's cost (a cold volume may be striped over pools of different
// usage types).
func (b *backing) io(ctx context.Context, p []byte, off int64, op func(*os.File, []byte, int64) (int, error)) error {
	pos := 0
	return b.each(off, int64(len(p)), func(m int, moff, _, take int64) error {
		q := p[pos : pos+int(take)]
		pos += int(take)
		if err := b.gates[m].enter(ctx, b.gates[m].cost(take)); err != nil {
			return err
		}
		defer b.gates[m].leave()
		_, err := op(b.files[m], q, moff)
		return err
	})
}

// holes calls fn with the ranges of [off, off+n) of the volume that no
// file has allocated: they read as zeros, whatever a filter stack would
// make of the zeros the file returns.
func (b *backing) holes(off, n int64, fn func(lo, hi int64)) error {
	vpos := off
	return b.each(off, n, func(m int, moff, _, take int64) error {
		base := vpos - moff // volume offset = member offset + base, in this piece
		vpos += take
		return holeRanges(b.files[m], moff, take, func(lo, hi int64) { fn(lo+base, hi+base) })
	})
}

// holeRanges calls fn for each hole of f within [off, off+n).
func holeRanges(f *os.File, off, n int64, fn func(lo, hi int64)) error {
	fd := int(f.Fd())
	end := off + n
	for pos := off; pos < end; {
		data, err := unix.Seek(fd, pos, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			fn(pos, end) // no data from pos on
			return nil
		}
		if err != nil {
			return err
		}
		if data > pos {
			fn(pos, min(data, end))
		}
		if data >= end {
			return nil
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		pos = hole
	}
	return nil
}

// punch deallocates a range; reads of it return zeros afterwards.
func (b *backing) punch(off, n int64) error {
	return b.each(off, n, func(m int, moff, _, take int64) error {
		err := unix.Fallocate(int(b.files[m].Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, moff, take)
		if errors.Is(err, unix.EOPNOTSUPP) {
			_, err = writePieces(b.files[m], make([]byte, take), moff)
		}
		return err
	})
}

// zeroRange zeroes a range and keeps (or makes) it allocated.
func (b *backing) zeroRange(off, n int64) error {
	return b.each(off, n, func(m int, moff, _, take int64) error {
		err := unix.Fallocate(int(b.files[m].Fd()), unix.FALLOC_FL_ZERO_RANGE|unix.FALLOC_FL_KEEP_SIZE, moff, take)
		if !errors.Is(err, unix.EOPNOTSUPP) {
			return err
		}
		// The filesystem cannot: write the zeros.
		z := make([]byte, min(take, zeroChunk))
		for take > 0 {
			k := min(take, int64(len(z)))
			if _, err := writePieces(b.files[m], z[:k], moff); err != nil {
				return err
			}
			moff += k
			take -= k
		}
		return nil
	})
}

// sync makes every member durable (FLUSH, FUA).
func (b *backing) sync() error {
	for _, f := range b.files {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	return nil
}

// remove deletes a volume's member files.
func removeBacking(v meta.Volume, pools map[string]meta.Pool) error {
	var errs []error
	for i, e := range v.Extents {
		if p, ok := pools[e.Pool]; ok {
			if err := os.Remove(memberPath(p.Dir, v, i)); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
