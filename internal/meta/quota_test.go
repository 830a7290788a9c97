package meta

import (
	"errors"
	"sync"
	"testing"
)

// Charges move a tenant's and a bucket's counters together, refuse
// atomically (nothing changes when one scope is over), honour the smaller of
// the stored and the policy limit and the default when neither is set.
func TestQuotaCharges(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		s := st.store(t)
		ten, bkt := Scope{Tenant: "acme"}, Scope{Tenant: "acme", Bucket: "b1"}
		if err := s.SetQuota(ctx, ten, Counters{Bytes: 100, Objects: 3}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetQuota(ctx, bkt, Counters{Bytes: 60}); err != nil {
			t.Fatal(err)
		}
		put := func(n int64) error {
			return s.Charge(ctx,
				Charge{Scope: ten, Delta: Counters{Bytes: n, Physical: n / 2, Objects: 1}},
				Charge{Scope: bkt, Delta: Counters{Bytes: n, Physical: n / 2, Objects: 1}})
		}
		if err := put(50); err != nil {
			t.Fatal(err)
		}
		err := put(20) // the bucket's 60 refuses, the tenant's 100 would not
		var qe *QuotaError
		if !errors.As(err, &qe) || !errors.Is(err, ErrQuotaExceeded) || qe.Scope != bkt || qe.Field != "bytes" || qe.Limit != 60 || qe.Used != 50 || qe.Want != 20 {
			t.Fatalf("over the bucket's bytes: %v", err)
		}
		lim, use, err := s.Quota(ctx, ten)
		if err != nil || lim != (Counters{Bytes: 100, Objects: 3}) || use != (Counters{Bytes: 50, Physical: 25, Objects: 1}) {
			t.Fatalf("tenant after refusal: %+v %+v %v", lim, use, err)
		}
		// A delete frees, even past a limit.
		if err := s.Charge(ctx, Charge{Scope: ten, Delta: Counters{Bytes: -50, Physical: -25, Objects: -1}}, Charge{Scope: bkt, Delta: Counters{Bytes: -50, Physical: -25, Objects: -1}}); err != nil {
			t.Fatal(err)
		}
		// The policy's smaller limit wins; a larger one does not raise the stored one.
		err = s.Charge(ctx, Charge{Scope: ten, Delta: Counters{Objects: 2}, Policy: Counters{Objects: 1}})
		if !errors.As(err, &qe) || qe.Field != "objects" || qe.Limit != 1 {
			t.Fatalf("policy limit 1: %v", err)
		}
		err = s.Charge(ctx, Charge{Scope: ten, Delta: Counters{Objects: 4}, Policy: Counters{Objects: 10}})
		if !errors.As(err, &qe) || qe.Limit != 3 {
			t.Fatalf("stored limit 3 under a policy of 10: %v", err)
		}
		// The default applies only where nothing else limits.
		if err := s.Charge(ctx, Charge{Scope: ten, Delta: Counters{Uploads: 2}, Default: Counters{Uploads: 2}}); err != nil {
			t.Fatal(err)
		}
		if err := s.Charge(ctx, Charge{Scope: ten, Delta: Counters{Uploads: 1}, Default: Counters{Uploads: 2}}); !errors.As(err, &qe) || qe.Field != "uploads" || qe.Limit != 2 {
			t.Fatalf("default uploads cap: %v", err)
		}
		if err := s.SetQuota(ctx, ten, Counters{Uploads: 5}); err != nil {
			t.Fatal(err)
		}
		if err := s.Charge(ctx, Charge{Scope: ten, Delta: Counters{Uploads: 1}, Default: Counters{Uploads: 2}}); err != nil {
			t.Fatalf("a stored quota raises the default cap: %v", err)
		}
		// A recount replaces usage and keeps limits; dropping forgets both.
		if err := s.SetUsage(ctx, ten, Counters{Bytes: 7}); err != nil {
			t.Fatal(err)
		}
		if lim, use, err := s.Quota(ctx, ten); err != nil || lim.Uploads != 5 || use != (Counters{Bytes: 7}) {
			t.Fatalf("after recount: %+v %+v %v", lim, use, err)
		}
		if err := s.DropCounters(ctx, ten); err != nil {
			t.Fatal(err)
		}
		if lim, use, err := s.Quota(ctx, ten); err != nil || lim != (Counters{}) || use != (Counters{}) {
			t.Fatalf("after drop: %+v %+v %v", lim, use, err)
		}
		if err := s.SetQuota(ctx, ten, Counters{Physical: 1}); err == nil {
			t.Fatal("a physical-bytes limit was accepted")
		}
	})
}

// Concurrent charges never take a counter over its limit: exactly limit of
// them win.
func TestQuotaChargesConcurrent(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		s := st.store(t)
		ten := Scope{Tenant: "acme"}
		if err := s.SetQuota(ctx, ten, Counters{Objects: 25}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		won, refused := 0, 0
		for range 40 {
			wg.Go(func() {
				err := s.Charge(ctx, Charge{Scope: ten, Delta: Counters{Objects: 1}})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won++
				case errors.Is(err, ErrQuotaExceeded):
					refused++
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if _, use, err := s.Quota(ctx, ten); err != nil || won != 25 || refused != 15 || use.Objects != 25 {
			t.Fatalf("won %d refused %d usage %+v %v", won, refused, use, err)
		}
	})
}

// BenchmarkCharge is what a write's reservation costs: one charge of a
// tenant's and a bucket's counters against their limits (bbolt commits
// with fsync, as the server does, concurrent charges together; Redis runs
// the script).
func BenchmarkCharge(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			st := be.setup(b)
			s, err := st.open(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ten, bkt := Scope{Tenant: "acme"}, Scope{Tenant: "acme", Bucket: "b1"}
			if err := s.SetQuota(b.Context(), ten, Counters{Bytes: 1 << 50, Objects: 1 << 40}); err != nil {
				b.Fatal(err)
			}
			b.SetParallelism(4) // 8 goroutines on 2 cores: writes in flight
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					d := Counters{Bytes: 4096, Physical: 4096, Objects: 1}
					if err := s.Charge(b.Context(), Charge{Scope: ten, Delta: d}, Charge{Scope: bkt, Delta: d}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
