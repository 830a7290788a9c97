package meta

import (
	"errors"
	"testing"
)

func TestPoolsAndVolumes(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		s := st.store(t)
		if _, err := s.CreateTenant(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreatePool(ctx, Pool{Name: "ssd", Dir: "/x", Capacity: 1 << 30, RandIOPS: 1000, Usage: "random"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreatePool(ctx, Pool{Name: "ssd", Dir: "/y", Capacity: 1}); !errors.Is(err, ErrPoolExists) {
			t.Fatalf("duplicate pool: %v", err)
		}
		if _, err := s.CreatePool(ctx, Pool{Name: "Bad/", Dir: "/y", Capacity: 1}); !errors.Is(err, ErrInvalidPool) {
			t.Fatalf("bad pool name: %v", err)
		}
		var seen int
		place := func(pools []Pool, others []Volume, v Volume) ([]Extent, error) {
			seen = len(others)
			return []Extent{{Pool: pools[0].Name, Capacity: v.Size, IOPS: v.IOPS}}, nil
		}
		v, err := s.CreateVolume(ctx, Volume{Name: "v1", Tenant: "acme", Size: 1 << 20, Class: "random", IOPS: 100}, place)
		if err != nil {
			t.Fatal(err)
		}
		if v.ID == "" || len(v.Extents) != 1 || v.Extents[0].Pool != "ssd" {
			t.Fatalf("created %+v", v)
		}
		if _, err := s.CreateVolume(ctx, Volume{Name: "v1", Tenant: "acme", Size: 1}, place); !errors.Is(err, ErrVolumeExists) {
			t.Fatalf("duplicate volume: %v", err)
		}
		if _, err := s.CreateVolume(ctx, Volume{Name: "v2", Tenant: "nobody", Size: 1}, place); !errors.Is(err, ErrTenantNotFound) {
			t.Fatalf("unknown tenant: %v", err)
		}
		refuse := errors.New("no room")
		if _, err := s.CreateVolume(ctx, Volume{Name: "v3", Tenant: "acme", Size: 1}, func([]Pool, []Volume, Volume) ([]Extent, error) { return nil, refuse }); !errors.Is(err, refuse) {
			t.Fatalf("refused placement: %v", err)
		}
		if _, err := s.CreateVolume(ctx, Volume{Name: "v4", Tenant: "acme", Size: 1}, place); err != nil || seen != 1 {
			t.Fatalf("second volume: %v, saw %d others", err, seen)
		}
		up, err := s.UpdateVolume(ctx, "v1", func(v *Volume, _ []Pool, others []Volume) error {
			v.Throttle.ReadBW, v.ID = 3e6, "forged"
			return nil
		})
		if err != nil || up.Throttle.ReadBW != 3e6 || up.ID != v.ID {
			t.Fatalf("update: %+v %v", up, err)
		}
		if err := s.DeletePool(ctx, "ssd"); !errors.Is(err, ErrPoolInUse) {
			t.Fatalf("delete used pool: %v", err)
		}
		vs, err := s.ListVolumes(ctx)
		if err != nil || len(vs) != 2 {
			t.Fatalf("list: %v %v", vs, err)
		}
		for _, n := range []string{"v1", "v4"} {
			if _, err := s.DeleteVolume(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.GetVolume(ctx, "v1"); !errors.Is(err, ErrVolumeNotFound) {
			t.Fatalf("get deleted: %v", err)
		}
		if err := s.DeletePool(ctx, "ssd"); err != nil {
			t.Fatal(err)
		}
	})
}
