package meta

import (
	"testing"
	"time"
)

func TestLease(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		s := st.store(t)
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		s.now = func() time.Time { return now }
		acquire := func(holder string, want bool) {
			t.Helper()
			got, err := s.AcquireLease(ctx, "controller", holder, 3*time.Second)
			if err != nil {
				t.Fatalf("AcquireLease(%s): %v", holder, err)
			}
			if got != want {
				t.Fatalf("AcquireLease(%s) = %v at %v; want %v", holder, got, now, want)
			}
		}
		holder := func(want string) {
			t.Helper()
			if got, err := s.LeaseHolder(ctx, "controller"); err != nil || got != want {
				t.Fatalf("LeaseHolder = %q, %v; want %q", got, err, want)
			}
		}
		holder("")
		acquire("a", true) // free
		acquire("b", false)
		holder("a")
		now = now.Add(2 * time.Second)
		acquire("a", true) // renewed: expires 3 s from now
		now = now.Add(2 * time.Second)
		acquire("b", false) // a's renewal still runs
		if ok, err := s.AcquireLease(ctx, "other", "b", time.Second); err != nil || !ok {
			t.Fatalf("a second lease name is independent: %v, %v", ok, err)
		}
		now = now.Add(1500 * time.Millisecond)
		holder("")
		acquire("b", true) // expired: taken over
		acquire("a", false)
		holder("b")

		if err := s.ReleaseLease(ctx, "controller", "a"); err != nil {
			t.Fatal(err)
		}
		holder("b") // only the holder releases
		if err := s.ReleaseLease(ctx, "controller", "b"); err != nil {
			t.Fatal(err)
		}
		holder("")
		acquire("a", true) // released: free at once
		if _, err := s.AcquireLease(ctx, "controller", "", time.Second); err == nil {
			t.Fatal("an empty holder is accepted")
		}
	})
}

func TestLeaseSurvivesReopen(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		s, err := st.open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := s.AcquireLease(ctx, "controller", "a", time.Hour); err != nil || !ok {
			t.Fatalf("AcquireLease: %v, %v", ok, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s2 := st.store(t)
		if ok, err := s2.AcquireLease(ctx, "controller", "b", time.Hour); err != nil || ok {
			t.Fatalf("a lease taken before a reopen is still held: got %v, %v", ok, err)
		}
	})
}

// TestLeaseTerm: a new acquisition raises the term, a renewal keeps it,
// and a release does not reset it (issue 23: gateways refuse assignments
// of a term older than one they have seen).
func TestLeaseTerm(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		s := st.store(t)
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		s.now = func() time.Time { return now }
		term := func(holder string, want uint64) {
			t.Helper()
			got, err := s.AcquireLeaseTerm(ctx, "controller", holder, 3*time.Second)
			if err != nil || got != want {
				t.Fatalf("AcquireLeaseTerm(%s) = %d, %v; want %d", holder, got, err, want)
			}
		}
		term("a", 1) // free
		term("a", 1) // renewed
		term("b", 0) // a's is current
		now = now.Add(4 * time.Second)
		term("b", 2) // expired: taken over
		if err := s.ReleaseLease(ctx, "controller", "b"); err != nil {
			t.Fatal(err)
		}
		term("a", 3) // released: free at once, under a newer term
		now = now.Add(4 * time.Second)
		term("a", 4) // a lapse is a new acquisition, even by the same holder
	})
}
