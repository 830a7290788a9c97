package block

import (
	"errors"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/meta"
)

const gib = 1 << 30

func TestPlacementTable(t *testing.T) {
	pools := []meta.Pool{
		{Name: "hdd-a", Capacity: 1000 * gib, SeqBW: 200e6, Usage: ClassSequential},
		{Name: "hdd-b", Capacity: 1000 * gib, SeqBW: 200e6, Usage: ClassSequential},
		{Name: "ssd", Capacity: 100 * gib, RandIOPS: 50000, Usage: ClassRandom},
		{Name: "ssd2", Capacity: 200 * gib, RandIOPS: 50000, Usage: ClassRandom},
		{Name: "spare", Capacity: 50 * gib, Usage: ClassBestEffort},
	}
	// Each step places one volume given the ones placed before it.
	steps := []struct {
		v     meta.Volume
		pools string // comma-separated stripe members; "" means refused
		why   string // part of the refusal
	}{
		// Fits on one pool; equal fits go by name.
		{meta.Volume{Name: "s1", Size: 100 * gib, Class: ClassSequential, SeqBW: 150e6}, "hdd-a", ""},
		// Best fit: hdd-a is fuller after it, so it takes it (maximise use).
		{meta.Volume{Name: "s2", Size: 10 * gib, Class: ClassSequential, SeqBW: 40e6}, "hdd-a", ""},
		// No pool has 300 MB/s, and a stripe over both would need 150 on
		// hdd-a, which has 10 left: refused, with each pool's shortfall.
		{meta.Volume{Name: "s3", Size: 10 * gib, Class: ClassSequential, SeqBW: 300e6}, "",
			"pool hdd-a needs 300.0 MB/s sequential, 10.0 MB/s unreserved of 200.0 MB/s; " +
				"pool hdd-b needs 300.0 MB/s sequential, 200.0 MB/s unreserved of 200.0 MB/s; " +
				"striped over all 2 sequential pools, each member needs 5.0 GiB and 150.0 MB/s, and only 1 can take it"},
		{meta.Volume{Name: "s4", Size: 10 * gib, Class: ClassSequential, SeqBW: 190e6}, "hdd-b", ""},
		// Random volumes go on random pools, by IOPS.
		{meta.Volume{Name: "r1", Size: 50 * gib, Class: ClassRandom, IOPS: 40000}, "ssd", ""},
		{meta.Volume{Name: "r2", Size: 50 * gib, Class: ClassRandom, IOPS: 40000}, "ssd2", ""},
		// 30000 IOPS fit nowhere alone (10000 left on each): refused, the
		// stripe too (15000 each).
		{meta.Volume{Name: "r3", Size: 10 * gib, Class: ClassRandom, IOPS: 30000}, "", "needs 30000 IOPS, 10000 unreserved of 50000"},
		// 16000 IOPS: striped 8000 + 8000.
		{meta.Volume{Name: "r4", Size: 10 * gib, Class: ClassRandom, IOPS: 16000}, "ssd,ssd2", ""},
		// Capacity: 300 GiB is more than either random pool has left, but
		// the stripe cannot take 150 GiB on ssd either.
		{meta.Volume{Name: "r5", Size: 300 * gib, Class: ClassRandom, IOPS: 100}, "", "capacity"},
		// Capacity-only volumes prefer best-effort pools, whatever
		// fits best elsewhere (c1 would fit the fuller ssd).
		{meta.Volume{Name: "c1", Size: 30 * gib, Class: ClassCold}, "spare", ""},
		// spare has 20 GiB left: the next tier, sequential pools, best
		// fit (equal fill: by name).
		{meta.Volume{Name: "b1", Size: 40 * gib, Class: ClassBestEffort}, "hdd-a", ""},
		{meta.Volume{Name: "b2", Size: 15 * gib, Class: ClassBestEffort}, "spare", ""},
		// 2500 GiB fits no tier, striped or not: refused with the
		// reasons of every tier, best-effort pools first.
		{meta.Volume{Name: "c2", Size: 2500 * gib, Class: ClassCold}, "", "pool spare needs 2.4 TiB of capacity, 5.0 GiB free of 50.0 GiB; " +
			"pool hdd-a needs 2.4 TiB of capacity"},
		{meta.Volume{Name: "c3", Size: 100 * gib, Class: ClassCold}, "hdd-a", ""},
	}
	var placed []meta.Volume
	for _, st := range steps {
		ext, err := Place(pools, placed, st.v)
		if st.pools == "" {
			if !errors.Is(err, ErrNoPlacement) || !strings.Contains(err.Error(), st.why) {
				t.Fatalf("%s: placed on %v (%v), want refusal mentioning %q", st.v.Name, ext, err, st.why)
			}
			t.Logf("%s refused: %v", st.v.Name, err)
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", st.v.Name, err)
		}
		var names []string
		for _, e := range ext {
			names = append(names, e.Pool)
		}
		if got := strings.Join(names, ","); got != st.pools {
			t.Fatalf("%s placed on %s, want %s", st.v.Name, got, st.pools)
		}
		v := st.v
		v.Extents = ext
		placed = append(placed, v)
	}
	// Every pool stays within what it declared.
	for _, f := range freeRoom(pools, placed) {
		if f.cap < 0 || f.bw < 0 || f.iops < 0 {
			t.Errorf("pool %s overcommitted: %+v", f.pool.Name, f)
		}
	}
}

func TestPlacementStripes(t *testing.T) {
	pools := []meta.Pool{
		{Name: "a", Capacity: 10 * gib, SeqBW: 100e6, Usage: ClassSequential},
		{Name: "b", Capacity: 10 * gib, SeqBW: 100e6, Usage: ClassSequential},
		{Name: "c", Capacity: 10 * gib, SeqBW: 100e6, Usage: ClassSequential},
	}
	ext, err := Place(pools, nil, meta.Volume{Name: "wide", Size: 25 * gib, Class: ClassSequential, SeqBW: 270e6})
	if err != nil || len(ext) != 3 {
		t.Fatalf("want a stripe over 3 pools: %v %v", ext, err)
	}
	for _, e := range ext {
		if e.SeqBW != 90e6 || e.Capacity%StripeUnit != 0 || e.Capacity*3 < 25*gib {
			t.Errorf("member %+v", e)
		}
	}
	_, err = Place(pools, nil, meta.Volume{Name: "huge", Size: 40 * gib, Class: ClassSequential, SeqBW: 10e6})
	if !errors.Is(err, ErrNoPlacement) || !strings.Contains(err.Error(), "striped over all 3 sequential pools") {
		t.Fatalf("refusal: %v", err)
	}
	for _, bad := range []meta.Volume{
		{Name: "x", Size: gib, Class: ClassSequential},
		{Name: "x", Size: gib, Class: ClassRandom, SeqBW: 5},
		{Name: "x", Size: gib, Class: ClassCold, IOPS: 5},
		{Name: "x", Size: gib + 1, Class: ClassCold},
		{Name: "x", Size: gib, Class: "fast"},
	} {
		if _, err := Place(pools, nil, bad); !errors.Is(err, ErrInvalidReservation) {
			t.Errorf("%+v: %v, want ErrInvalidReservation", bad, err)
		}
	}
}

// TestPlacementCapacityOnly covers the tiers of cold and best-effort
// volumes (best-effort pools, then sequential, then random) and the
// default pool, which takes new volumes only while it is alone.
func TestPlacementCapacityOnly(t *testing.T) {
	pools := []meta.Pool{
		{Name: "ssd", Capacity: 100 * gib, RandIOPS: 50000, Usage: ClassRandom},
		{Name: "hdd", Capacity: 100 * gib, SeqBW: 200e6, Usage: ClassSequential},
		{Name: "spare", Capacity: 10 * gib, Usage: ClassBestEffort},
	}
	var placed []meta.Volume
	for _, st := range []struct {
		v    meta.Volume
		want string
	}{
		{meta.Volume{Name: "c1", Size: 5 * gib, Class: ClassCold}, "spare"},
		{meta.Volume{Name: "b1", Size: 8 * gib, Class: ClassBestEffort}, "hdd"},
		{meta.Volume{Name: "b2", Size: 95 * gib, Class: ClassBestEffort}, "ssd"},
		// 100 GiB: the rest of hdd (92) and ssd (5) hold it neither
		// alone nor striped within their tier.
		{meta.Volume{Name: "b3", Size: 100 * gib, Class: ClassBestEffort}, ""},
	} {
		ext, err := Place(pools, placed, st.v)
		if st.want == "" {
			if !errors.Is(err, ErrNoPlacement) || !strings.Contains(err.Error(), "pool ssd needs 100.0 GiB of capacity, 5.0 GiB free") {
				t.Fatalf("%s: %v %v, want a refusal with ssd's reason", st.v.Name, ext, err)
			}
			continue
		}
		if err != nil || len(ext) != 1 || ext[0].Pool != st.want {
			t.Fatalf("%s: %v %v, want %s", st.v.Name, ext, err, st.want)
		}
		v := st.v
		v.Extents = ext
		placed = append(placed, v)
	}

	def := meta.Pool{Name: "default", Capacity: 50 * gib, Usage: ClassBestEffort, Default: true}
	alone := []meta.Pool{def}
	if ext, err := Place(alone, nil, meta.Volume{Name: "v", Size: gib, Class: ClassBestEffort}); err != nil || ext[0].Pool != "default" {
		t.Fatalf("default pool alone: %v %v", ext, err)
	}
	_, err := Place(alone, nil, meta.Volume{Name: "v", Size: gib, Class: ClassSequential, SeqBW: 1e6})
	if !errors.Is(err, ErrNoPlacement) || !strings.Contains(err.Error(), "pool default is for best-effort volumes") {
		t.Fatalf("sequential on the default pool: %v", err)
	}
	// With an administrator's pool, the default takes nothing new,
	// even where it would have room and the other has not.
	both := []meta.Pool{def, {Name: "ssd", Capacity: gib, RandIOPS: 100, Usage: ClassRandom}}
	if ext, err := Place(both, nil, meta.Volume{Name: "v", Size: gib, Class: ClassBestEffort}); err != nil || ext[0].Pool != "ssd" {
		t.Fatalf("best-effort with an administrator's pool: %v %v", ext, err)
	}
	if ext, err := Place(both, nil, meta.Volume{Name: "v", Size: 2 * gib, Class: ClassBestEffort}); err == nil {
		t.Fatalf("placed on %v, want a refusal (the default pool takes no new volume)", ext)
	}
}

// TestPlacementLastTier: a capacity-only volume no tier holds alone is
// striped over pools of any usage before it is refused.
func TestPlacementLastTier(t *testing.T) {
	pools := []meta.Pool{
		{Name: "ssd", Capacity: 10 * gib, RandIOPS: 5000, Usage: ClassRandom},
		{Name: "hdd", Capacity: 10 * gib, SeqBW: 100e6, Usage: ClassSequential},
	}
	ext, err := Place(pools, nil, meta.Volume{Name: "c", Size: 16 * gib, Class: ClassCold})
	if err != nil || len(ext) != 2 || ext[0].Capacity != 8*gib {
		t.Fatalf("want a stripe over hdd and ssd: %v %v", ext, err)
	}
	_, err = Place(pools, nil, meta.Volume{Name: "c", Size: 24 * gib, Class: ClassCold})
	if !errors.Is(err, ErrNoPlacement) || !strings.Contains(err.Error(), "striped over all 2 pools of any usage, each member needs 12.0 GiB") {
		t.Fatalf("refusal: %v", err)
	}
}
