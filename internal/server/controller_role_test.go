package server

import (
	"context"
	"crypto/rand"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/control"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/meta"
)

// Two controller roles on one store: one holds the lease and runs the
// controllers, the other waits; when the holder stops, it gives the lease
// up and the standby takes over.
func TestControllerRoleLeaseFailover(t *testing.T) {
	mk := make([]byte, meta.MasterKeySize)
	if _, err := rand.Read(mk); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	store, err := meta.Open(t.Context(), filepath.Join(t.TempDir(), meta.DefaultBoltFile), mk, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	policies := control.New(control.Config{Store: store, Registry: filter.NewBuiltinRegistry(), Logger: logger})
	if err := policies.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	start := func(id string) (*controllerRole, context.CancelFunc, chan struct{}) {
		r := &controllerRole{id: id, ttl: 2 * time.Second, store: store, policies: policies, log: logger}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { r.run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		return r, cancel, done
	}
	lease := func(r *controllerRole) string {
		st, err := r.status(t.Context(), true)
		if err != nil {
			t.Fatal(err)
		}
		return st.Lease
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("never: %s", what)
			}
		}
	}
	a, stopA, doneA := start("a")
	waitFor("a holds the lease", func() bool { return lease(a) == "held" })
	b, _, _ := start("b")
	// b has asked at least once (at start) and was refused.
	time.Sleep(300 * time.Millisecond)
	if lease(b) != "standby" || lease(a) != "held" {
		t.Fatalf("a %s, b %s; want held and standby", lease(a), lease(b))
	}
	if h, err := store.LeaseHolder(t.Context(), ControllerLease); err != nil || h != "a" {
		t.Fatalf("stored holder %q, %v; want a", h, err)
	}
	stopA()
	<-doneA
	if lease(a) != "standby" {
		t.Fatal("a stopped and still reports the lease")
	}
	waitFor("b takes over", func() bool { return lease(b) == "held" })
	if h, err := store.LeaseHolder(t.Context(), ControllerLease); err != nil || h != "b" {
		t.Fatalf("stored holder %q, %v; want b", h, err)
	}
}
