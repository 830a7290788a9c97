package block

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/facet-sds/facet/internal/block/bfilter"
	"github.com/facet-sds/facet/internal/block/nbd"
	"github.com/facet-sds/facet/internal/meta"
)

// volume is an open volume, shared by every connection to it: one
// backing, one stack, one set of throttles, one flow per pool queue.
type volume struct {
	rec    meta.Volume
	back   *backing
	flows  map[*gate]*flow
	stack  atomic.Pointer[bfilter.Stack]
	steps  []StackStep // what stack was built from; guarded by the manager's lock
	warned bool        // a stack change waits for the volume's next open; guarded likewise

	readBW, writeBW, readOps, writeOps *bucket

	// rmw serialises read-modify-write of partial blocks when the stack
	// transforms whole blocks (encryption). A volume reopened at a new
	// size while connections still use the old open shares it (and the
	// throttles) with that open: both write the same files, and
	// CAN_MULTI_CONN promises their connections one consistent device.
	rmw *sync.Mutex

	refs int // guarded by the manager's lock

	// stats outlive the open volume: they are the manager's, by name.
	stats *volumeStats
}

// volumeStats are cumulative counters, read by metrics.
type volumeStats struct {
	readBytes, writeBytes, readOps, writeOps atomic.Int64
}

func (v *volume) setThrottle(t meta.Throttle) {
	v.readBW.set(float64(t.ReadBW), StripeUnit)
	v.writeBW.set(float64(t.WriteBW), StripeUnit)
	v.readOps.set(float64(t.ReadIOPS), 1)
	v.writeOps.set(float64(t.WriteIOPS), 1)
}

func (v *volume) throttle(ctx context.Context, ops, bw *bucket, n int) error {
	if err := ops.wait(ctx, 1); err != nil {
		return err
	}
	return bw.wait(ctx, float64(n))
}

// cost is the unit of pool work of a piece: 4 KiB operations for random
// and best-effort pools, bytes for sequential ones.
func costOf(usage string) costFn {
	if usage == ClassSequential {
		return func(n int64) float64 { return float64(n) }
	}
	return func(n int64) float64 { return float64((n + 4095) / 4096) }
}

func (v *volume) readRaw(ctx context.Context, p []byte, off int64) error {
	return v.back.readAt(ctx, p, off)
}

func (v *volume) writeRaw(ctx context.Context, p []byte, off int64) error {
	return v.back.writeAt(ctx, p, off)
}

// device is one connection's handle on a volume.
type device struct {
	v     *volume
	close func()
}

var _ nbd.Device = (*device)(nil)

func (d *device) Close() error { d.close(); return nil }

func (d *device) ReadAt(ctx context.Context, p []byte, off int64) error {
	v := d.v
	if err := v.throttle(ctx, v.readOps, v.readBW, len(p)); err != nil {
		return err
	}
	if err := v.read(ctx, p, off); err != nil {
		return err
	}
	v.stats.readOps.Add(1)
	v.stats.readBytes.Add(int64(len(p)))
	return nil
}

// fsBlock is the allocation unit assumed of the pools' filesystems. With
// a filter stack, whole blocks are written (read-modify-write at the
// edges), so an allocated block never holds raw zeros that the stack
// would decode into garbage, and holes read as zeros.
const fsBlock = 4096

func stackAlign(st *bfilter.Stack) int {
	if st.Empty() {
		return 1
	}
	return lcmInt(max(st.Align, 1), fsBlock)
}

func lcmInt(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

func (v *volume) read(ctx context.Context, p []byte, off int64) error {
	st := v.stack.Load()
	if st.Empty() {
		return v.readRaw(ctx, p, off)
	}
	align := stackAlign(st)
	lo, buf := off, p
	if off%int64(align) != 0 || len(p)%align != 0 {
		lo, buf = v.aligned(off, len(p), align)
	}
	if err := v.readRaw(ctx, buf, lo); err != nil {
		return err
	}
	if err := st.Decode(lo, buf); err != nil {
		return err
	}
	if err := v.back.holes(lo, int64(len(buf)), func(a, b int64) { clear(buf[a-lo : b-lo]) }); err != nil {
		return err
	}
	if lo != off || len(buf) != len(p) {
		copy(p, buf[off-lo:])
	}
	return nil
}

// aligned returns the block-aligned range around [off, off+n) and a
// buffer for it.
func (v *volume) aligned(off int64, n, align int) (int64, []byte) {
	a := int64(align)
	lo := off / a * a
	hi := (off + int64(n) + a - 1) / a * a
	hi = min(hi, v.rec.Size)
	return lo, make([]byte, hi-lo)
}

// WriteAt may transform p in place: the NBD server hands over its buffer.
func (d *device) WriteAt(ctx context.Context, p []byte, off int64, fua bool) error {
	v := d.v
	if err := v.throttle(ctx, v.writeOps, v.writeBW, len(p)); err != nil {
		return err
	}
	if err := v.write(ctx, p, off); err != nil {
		return err
	}
	v.stats.writeOps.Add(1)
	v.stats.writeBytes.Add(int64(len(p)))
	if fua {
		return d.Flush(ctx)
	}
	return nil
}

func (v *volume) write(ctx context.Context, p []byte, off int64) error {
	st := v.stack.Load()
	if st.Empty() {
		return v.writeRaw(ctx, p, off)
	}
	align := stackAlign(st)
	if off%int64(align) == 0 && (len(p)%align == 0 || off+int64(len(p)) == v.rec.Size) {
		if err := st.Encode(off, p); err != nil {
			return err
		}
		return v.writeRaw(ctx, p, off)
	}
	// A partial block: read it, patch it, write it whole.
	v.rmw.Lock()
	defer v.rmw.Unlock()
	lo, buf := v.aligned(off, len(p), align)
	if err := v.read(ctx, buf, lo); err != nil {
		return err
	}
	copy(buf[off-lo:], p)
	if err := st.Encode(lo, buf); err != nil {
		return err
	}
	return v.writeRaw(ctx, buf, lo)
}

// zero makes [off, off+n) read as zeros: holes for whole blocks, encoded
// zeros written at unaligned edges when a stack is in force.
func (v *volume) zero(ctx context.Context, off, n int64) error {
	st := v.stack.Load()
	align := int64(stackAlign(st))
	if st.Empty() {
		return v.back.punch(off, n)
	}
	lo := (off + align - 1) / align * align
	hi := (off + n) / align * align
	if hi <= lo {
		return v.write(ctx, make([]byte, n), off)
	}
	if lo > off {
		if err := v.write(ctx, make([]byte, lo-off), off); err != nil {
			return err
		}
	}
	if end := off + n; end > hi {
		if err := v.write(ctx, make([]byte, end-hi), hi); err != nil {
			return err
		}
	}
	return v.back.punch(lo, hi-lo)
}

// zeroChunk bounds the zeros written at once by zeroAllocated; a multiple
// of every stack alignment (lcm of the filters' blocks and fsBlock).
const zeroChunk = 1 << 20

// zeroAllocated makes [off, off+n) read as zeros and stay allocated
// (WRITE_ZEROES with NO_HOLE: later writes there must not fail for
// space). Without a stack the file zeroes the range in place; through a
// stack the encoded zeros are written, since allocated raw zeros would
// decode into something else.
func (v *volume) zeroAllocated(ctx context.Context, off, n int64) error {
	if v.stack.Load().Empty() {
		return v.back.zeroRange(off, n)
	}
	for n > 0 {
		k := min(n, zeroChunk-off%zeroChunk) // whole chunks after the first
		if err := v.write(ctx, make([]byte, k), off); err != nil {
			return err
		}
		off += k
		n -= k
	}
	return nil
}

func (d *device) Flush(context.Context) error {
	if err := d.v.back.sync(); err != nil {
		return fmt.Errorf("volume %s: flush: %w", d.v.rec.Name, err)
	}
	return nil
}

func (d *device) Trim(ctx context.Context, off, n int64, fua bool) error {
	// Trimmed bytes may read back as anything (NBD); here they read as
	// zeros, through any stack.
	if err := d.v.zero(ctx, off, n); err != nil {
		return err
	}
	if fua {
		return d.Flush(ctx)
	}
	return nil
}

func (d *device) WriteZeroes(ctx context.Context, off, n int64, fua, noHole bool) error {
	v := d.v
	if err := v.throttle(ctx, v.writeOps, v.writeBW, 0); err != nil {
		return err
	}
	zero := v.zero
	if noHole {
		zero = v.zeroAllocated
	}
	if err := zero(ctx, off, n); err != nil {
		return err
	}
	v.stats.writeOps.Add(1)
	if fua {
		return d.Flush(ctx)
	}
	return nil
}
