// Package block owns Facet's block storage: volumes (sparse backing files
// on one pool or striped over several), pools, the reservation scheduler
// that places volumes by QoS class (HARNESS D5.1 §4.1), the weighted
// fair-share queue of each pool (§4.2), the per-volume filter stacks and
// throttles, per-volume metrics, and the Exports the NBD server serves.
package block

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/facet-sds/facet/internal/meta"
)

// QoS classes of volumes and usage types of pools.
const (
	ClassSequential = "sequential"  // reserves sequential MB/s
	ClassRandom     = "random"      // reserves random 4 KiB IOPS
	ClassCold       = "cold"        // capacity only; best-effort pools first (see tiers)
	ClassBestEffort = "best-effort" // capacity only; best-effort pools first (see tiers)
)

// StripeUnit is how many consecutive bytes of a striped volume one member
// holds before the next member takes over.
const StripeUnit = 1 << 20

// ErrNoPlacement refuses a volume no pool (or stripe of pools) can hold.
var ErrNoPlacement = errors.New("no placement")

// ErrInvalidReservation refuses a reservation that does not fit its class.
var ErrInvalidReservation = errors.New("invalid reservation")

// CheckPoolUsage validates a pool's usage type.
func CheckPoolUsage(u string) error {
	switch u {
	case ClassSequential, ClassRandom, ClassBestEffort:
		return nil
	}
	return fmt.Errorf("%w: usage %q: want sequential, random or best-effort", meta.ErrInvalidPool, u)
}

// CheckReservation validates a volume's class and its demands: MB/s only
// for sequential, IOPS only for random, neither for cold and best-effort
// (§4.1.1).
func CheckReservation(v meta.Volume) error {
	switch v.Class {
	case ClassSequential:
		if v.SeqBW <= 0 || v.IOPS != 0 {
			return fmt.Errorf("%w: a sequential volume reserves MB/s (seq_bw > 0) and no IOPS", ErrInvalidReservation)
		}
	case ClassRandom:
		if v.IOPS <= 0 || v.SeqBW != 0 {
			return fmt.Errorf("%w: a random volume reserves IOPS (iops > 0) and no MB/s", ErrInvalidReservation)
		}
	case ClassCold, ClassBestEffort:
		if v.IOPS != 0 || v.SeqBW != 0 {
			return fmt.Errorf("%w: a %s volume reserves capacity only", ErrInvalidReservation, v.Class)
		}
	default:
		return fmt.Errorf("%w: class %q: want sequential, random, cold or best-effort", ErrInvalidReservation, v.Class)
	}
	if v.Size <= 0 || v.Size%512 != 0 {
		return fmt.Errorf("%w: size %d: want a positive multiple of 512 bytes", ErrInvalidReservation, v.Size)
	}
	return nil
}

// tiers are the pool usages a volume of class may go on, in the order it
// tries them: it goes to a later tier only when no pool (or stripe) of the
// earlier ones can hold it. Reserving volumes go on pools of their own
// usage only. A capacity-only volume (cold, best-effort) reserves no
// bandwidth, so it can share any pool without taking from a reservation
// (the pool's fair-share queue gives it 1% of the pool): it prefers
// best-effort pools, then sequential ones (disks, where capacity is
// cheap), random pools next (flash, kept for IOPS reservations), and
// last a stripe over pools of every usage.
func tiers(class string) [][]string {
	switch class {
	case ClassCold, ClassBestEffort:
		return [][]string{{ClassBestEffort}, {ClassSequential}, {ClassRandom}, {ClassBestEffort, ClassSequential, ClassRandom}}
	}
	return [][]string{{class}}
}

// usable drops the default pool when an administrator's pool exists: it
// keeps the volumes it holds, and takes no new ones.
func usable(pools []meta.Pool) []meta.Pool {
	if !slices.ContainsFunc(pools, func(p meta.Pool) bool { return !p.Default }) {
		return pools
	}
	return slices.DeleteFunc(slices.Clone(pools), func(p meta.Pool) bool { return p.Default })
}

// free is what a pool has left.
type free struct {
	pool            meta.Pool
	cap, bw, iops   int64
	usedCap, usedBW int64
	usedIOPS        int64
}

func freeRoom(pools []meta.Pool, others []meta.Volume) []free {
	used := map[string]*free{}
	out := make([]free, len(pools))
	for i, p := range pools {
		out[i] = free{pool: p}
		used[p.Name] = &out[i]
	}
	for _, v := range others {
		for _, e := range v.Extents {
			if f, ok := used[e.Pool]; ok {
				f.usedCap += e.Capacity
				f.usedBW += e.SeqBW
				f.usedIOPS += e.IOPS
			}
		}
	}
	for i := range out {
		f := &out[i]
		f.cap, f.bw, f.iops = f.pool.Capacity-f.usedCap, f.pool.SeqBW-f.usedBW, f.pool.RandIOPS-f.usedIOPS
	}
	return out
}

// demand is one stripe member's share.
type demand struct{ cap, bw, iops int64 }

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

func share(v meta.Volume, width int) demand {
	w := int64(width)
	d := demand{bw: ceilDiv(v.SeqBW, w), iops: ceilDiv(v.IOPS, w)}
	if width == 1 {
		d.cap = v.Size
	} else {
		d.cap = ceilDiv(ceilDiv(v.Size, StripeUnit), w) * StripeUnit
	}
	return d
}

// shortfall says why f cannot take d, or "".
func (f free) shortfall(d demand) string {
	var why []string
	if d.cap > f.cap {
		why = append(why, fmt.Sprintf("needs %s of capacity, %s free of %s", human(d.cap), human(max(f.cap, 0)), human(f.pool.Capacity)))
	}
	if d.bw > f.bw {
		why = append(why, fmt.Sprintf("needs %s sequential, %s unreserved of %s", mbps(d.bw), mbps(max(f.bw, 0)), mbps(f.pool.SeqBW)))
	}
	if d.iops > f.iops {
		why = append(why, fmt.Sprintf("needs %d IOPS, %d unreserved of %d", d.iops, max(f.iops, 0), f.pool.RandIOPS))
	}
	return strings.Join(why, " and ")
}

// fill is how full f is after taking d, by its most used resource: the
// best fit is the fullest, which keeps the emptier pools for larger
// volumes and so maximises what the pools can hold in total.
func (f free) fill(d demand) float64 {
	ratio := func(used, add, total int64) float64 {
		if total <= 0 {
			return 0
		}
		return float64(used+add) / float64(total)
	}
	return max(ratio(f.usedCap, d.cap, f.pool.Capacity), ratio(f.usedBW, d.bw, f.pool.SeqBW), ratio(f.usedIOPS, d.iops, f.pool.RandIOPS))
}

// Place is the reservation scheduler (a meta.Placer). A volume goes on the
// one pool of its first tier (see tiers) it fits best; when none can hold
// it alone, it is striped over the fewest pools of that tier that can each
// hold an equal share (§4.1.2: a stripe member carries demand/width). A
// tier that cannot hold it passes it to the next; when none can, it is
// refused with each pool's reason. The default pool takes new volumes only
// while it is the only pool.
func Place(pools []meta.Pool, others []meta.Volume, v meta.Volume) ([]meta.Extent, error) {
	if err := CheckReservation(v); err != nil {
		return nil, err
	}
	room := freeRoom(usable(pools), others)
	var why []string
	seen := map[string]bool{}
	for _, usages := range tiers(v.Class) {
		var cands []free
		for _, f := range room {
			if slices.Contains(usages, f.pool.Usage) {
				cands = append(cands, f)
				seen[f.pool.Name] = true
			}
		}
		if ext := placeIn(cands, v); ext != nil {
			return ext, nil
		}
		// The last tier of several usages repeats the pools of the
		// ones before: only its stripe is news.
		why = append(why, refusal(cands, v, len(usages) == 1)...)
	}
	for _, f := range room {
		if !seen[f.pool.Name] {
			why = append(why, fmt.Sprintf("pool %s is for %s volumes", f.pool.Name, f.pool.Usage))
		}
	}
	if len(pools) == 0 {
		why = append(why, "there are no pools")
	}
	return nil, fmt.Errorf("%w for volume %s (%s, %s%s): %s", ErrNoPlacement, v.Name, v.Class, human(v.Size), demandText(v), strings.Join(why, "; "))
}

// placeIn places v on one of cands, or striped over the fewest of them
// that can each take an equal share; nil when they cannot hold it.
func placeIn(cands []free, v meta.Volume) []meta.Extent {
	for width := 1; width <= len(cands); width++ {
		d := share(v, width)
		var fit []free
		for _, f := range cands {
			if f.shortfall(d) == "" {
				fit = append(fit, f)
			}
		}
		if len(fit) < width {
			continue
		}
		sort.SliceStable(fit, func(i, j int) bool {
			fi, fj := fit[i].fill(d), fit[j].fill(d)
			if fi != fj {
				return fi > fj
			}
			return fit[i].pool.Name < fit[j].pool.Name
		})
		out := make([]meta.Extent, width)
		for i := range out {
			out[i] = meta.Extent{Pool: fit[i].pool.Name, Capacity: d.cap, SeqBW: d.bw, IOPS: d.iops}
		}
		return out
	}
	return nil
}

// refusal says why each of cands (when perPool is set), and a stripe
// over all of them, cannot hold v.
func refusal(cands []free, v meta.Volume, perPool bool) []string {
	var why []string
	d := share(v, 1)
	for _, f := range cands {
		if perPool {
			why = append(why, fmt.Sprintf("pool %s %s", f.pool.Name, f.shortfall(d)))
		}
	}
	if len(cands) > 1 {
		dn := share(v, len(cands))
		n := 0
		for _, f := range cands {
			if f.shortfall(dn) == "" {
				n++
			}
		}
		need := human(dn.cap)
		switch {
		case dn.bw > 0:
			need += " and " + mbps(dn.bw)
		case dn.iops > 0:
			need += fmt.Sprintf(" and %d IOPS", dn.iops)
		}
		over := fmt.Sprintf("all %d %s pools", len(cands), cands[0].pool.Usage)
		if !perPool {
			over = fmt.Sprintf("all %d pools of any usage", len(cands))
		}
		why = append(why, fmt.Sprintf("striped over %s, each member needs %s, and only %d can take it", over, need, n))
	}
	return why
}

func demandText(v meta.Volume) string {
	switch {
	case v.SeqBW > 0:
		return ", " + mbps(v.SeqBW)
	case v.IOPS > 0:
		return fmt.Sprintf(", %d IOPS", v.IOPS)
	}
	return ""
}

// Resize checks that v, with its new size, still fits its extents' pools,
// and returns the extents with their new capacities. The stripe width and
// pools stay: data does not move.
func Resize(pools []meta.Pool, others []meta.Volume, v meta.Volume) ([]meta.Extent, error) {
	if v.Size <= 0 || v.Size%512 != 0 {
		return nil, fmt.Errorf("%w: size %d: want a positive multiple of 512 bytes", ErrInvalidReservation, v.Size)
	}
	room := map[string]free{}
	for _, f := range freeRoom(pools, others) {
		room[f.pool.Name] = f
	}
	d := share(v, len(v.Extents))
	out := make([]meta.Extent, len(v.Extents))
	var why []string
	for i, e := range v.Extents {
		f := room[e.Pool]
		if s := f.shortfall(demand{cap: d.cap}); s != "" {
			why = append(why, fmt.Sprintf("pool %s %s", e.Pool, s))
		}
		out[i] = e
		out[i].Capacity = d.cap
	}
	if len(why) > 0 {
		return nil, fmt.Errorf("%w for volume %s at %s: %s", ErrNoPlacement, v.Name, human(v.Size), strings.Join(why, "; "))
	}
	return out, nil
}

// mbps writes a bandwidth in the decimal MB/s pools and volumes declare
// it in (--seq-bw 200MB/s is 200e6 bytes/s).
func mbps(n int64) string { return fmt.Sprintf("%.1f MB/s", float64(n)/1e6) }

func human(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
