package meta

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/meta/redistest"
)

func openRedisStore(t *testing.T, url string, mk []byte) *Store {
	t.Helper()
	s, err := OpenURL(t.Context(), url, t.TempDir(), mk, nil)
	if err != nil {
		t.Fatalf("OpenURL: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Every key is under the prefix, and stores with different prefixes share
// one Redis without seeing each other.
func TestRedisPrefixes(t *testing.T) {
	ctx := t.Context()
	srv := redistest.Start(t)
	rdb := redisClient(t, srv.URL(0, ""))
	if err := rdb.Set(ctx, "someone-else", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}

	def := openRedisStore(t, srv.URL(0, ""), testKey(t))
	other := openRedisStore(t, srv.URL(0, "prefix=cluster2:"), testKey(t))
	for _, s := range []*Store{def, other} {
		if _, err := s.CreateTenant(ctx, "acme"); err != nil {
			t.Fatalf("same tenant name under two prefixes: %v", err)
		}
	}
	if _, err := def.CreateTenant(ctx, "only-default"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.GetTenant(ctx, "only-default"); !errors.Is(err, ErrTenantNotFound) {
		t.Fatalf("tenant leaked across prefixes: %v", err)
	}
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k != "someone-else" && !strings.HasPrefix(k, DefaultRedisPrefix) && !strings.HasPrefix(k, "cluster2:") {
			t.Errorf("key %q outside the prefixes", k)
		}
	}
	if v, _ := rdb.Get(ctx, "someone-else").Result(); v != "x" {
		t.Fatal("a foreign key was touched")
	}
	// Another database of the same server is another store too.
	db1 := openRedisStore(t, srv.URL(1, ""), testKey(t))
	if ts, _ := db1.ListTenants(ctx); len(ts) != 0 {
		t.Fatalf("database 1 sees %v", ts)
	}
}

func TestOpenURLErrors(t *testing.T) {
	ctx := t.Context()
	mk := testKey(t)
	srv := redistest.Start(t)
	dead := redistest.Start(t)
	dead.Kill()

	for _, tc := range []struct {
		url, want string
	}{
		{"ftp://x", "unsupported"},
		{"bolt://", "want bolt://PATH"},
		{srv.URL(0, "prefix="), "empty prefix"},
		{srv.URL(0, "bogus=1"), "unexpected option"},
		{"redis://:hunter2secret@" + dead.Addr + "/0", "redis at redis://:xxxxx@" + dead.Addr},
	} {
		s, err := OpenURL(ctx, tc.url, t.TempDir(), mk, nil)
		if err == nil {
			_ = s.Close()
			t.Fatalf("OpenURL(%q) succeeded", tc.url)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("OpenURL(%q) = %v, want it to mention %q", tc.url, err, tc.want)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("OpenURL error shows the password: %v", err)
		}
	}
	if _, err := OpenURL(ctx, srv.URL(0, ""), t.TempDir(), mk[:8], nil); err == nil {
		t.Fatal("short master key accepted")
	}

	// bolt:// paths are relative to the data directory.
	dir := t.TempDir()
	s, err := OpenURL(ctx, "bolt://sub.db", dir, mk, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if s, err = Open(ctx, dir+"/sub.db", mk, nil); err != nil {
		t.Fatalf("bolt://sub.db did not create <data>/sub.db: %v", err)
	}
	_ = s.Close()
}

// A transaction whose read set changes before it commits runs again and
// commits the second run's writes only.
func TestRedisTransactionRetries(t *testing.T) {
	ctx := t.Context()
	srv := redistest.Start(t)
	s := openRedisStore(t, srv.URL(0, ""), testKey(t))
	rdb := redisClient(t, srv.URL(0, ""))

	runs := 0
	err := s.kv.update(ctx, func(tx kvTx) error {
		runs++
		if _, err := tx.get(tblGroups, "g"); err != nil {
			return err
		}
		if runs == 1 {
			// Another writer changes the table between read and commit.
			if err := rdb.HSet(ctx, DefaultRedisPrefix+tblGroups, "intruder", "x").Err(); err != nil {
				return err
			}
		}
		return tx.put(tblGroups, "g", []byte("run"+string(rune('0'+runs))))
	})
	if err != nil || runs != 2 {
		t.Fatalf("update: %v after %d runs, want 2 runs", err, runs)
	}
	if v, _ := rdb.HGet(ctx, DefaultRedisPrefix+tblGroups, "g").Result(); v != "run2" {
		t.Fatalf("committed %q, want the second run's write", v)
	}

	// A read-only transaction of several reads is validated the same way.
	runs = 0
	err = s.kv.view(ctx, func(tx kvTx) error {
		runs++
		if err := tx.scan(tblGroups, "", func(string, []byte) error { return nil }); err != nil {
			return err
		}
		if runs == 1 {
			if err := rdb.HSet(ctx, DefaultRedisPrefix+tblGroups, "intruder", "y").Err(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || runs != 2 {
		t.Fatalf("view: %v after %d runs, want 2 runs", err, runs)
	}
}

// With Redis gone, calls fail with an error instead of hanging, and the
// store works again when Redis is back... on a new server here, so only the
// failure is checked.
func TestRedisDown(t *testing.T) {
	ctx := t.Context()
	srv := redistest.Start(t)
	s := openRedisStore(t, srv.URL(0, ""), testKey(t))
	if _, err := s.CreateTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	if _, err := s.PolicyVersion(ctx); err == nil {
		t.Fatal("PolicyVersion succeeded with Redis down")
	}
	if _, err := s.CreateTenant(ctx, "beta"); err == nil {
		t.Fatal("CreateTenant succeeded with Redis down")
	}
}

// A hung Redis (frozen, connections open, no answers) fails a call by its
// context deadline: the request path's re-read gives up after
// storeReadTimeout and the fleet's health poll after its 2 s, not after
// go-redis's own read timeout and retries (5 s before
// ContextTimeoutEnabled). The bounds are generous: they only tell the
// deadline from the 5 s stall.
func TestRedisFrozenHonoursDeadlines(t *testing.T) {
	srv := redistest.Start(t)
	s := openRedisStore(t, srv.URL(0, ""), testKey(t))
	if _, err := s.PolicyVersion(t.Context()); err != nil {
		t.Fatal(err)
	}
	srv.Freeze(t)

	for _, tc := range []struct {
		name            string
		deadline, bound time.Duration
		call            func(context.Context) error
	}{
		{"access key re-read", storeReadTimeout, 3 * time.Second, func(ctx context.Context) error {
			_, _, err := s.LookupAccessKey(ctx, "AKIDFROZEN")
			return err
		}},
		// fleet's Sync.check polls PolicyVersion with a 2 s deadline.
		{"health poll", 2 * time.Second, 4 * time.Second, func(ctx context.Context) error {
			_, err := s.PolicyVersion(ctx)
			return err
		}},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), tc.deadline)
		start := time.Now()
		err := tc.call(ctx)
		took := time.Since(start)
		cancel()
		t.Logf("%s: %v deadline, failed after %v: %v", tc.name, tc.deadline, took.Round(time.Millisecond), err)
		if err == nil {
			t.Errorf("%s succeeded with Redis frozen", tc.name)
		}
		if took >= tc.bound {
			t.Errorf("%s with a %v deadline took %v with Redis frozen, want under %v", tc.name, tc.deadline, took, tc.bound)
		}
	}
}

func TestRedisLog(t *testing.T) {
	var buf strings.Builder
	l := RedisLog{Logger: slog.New(slog.NewTextHandler(&buf, nil))}
	l.Printf(t.Context(), "dial %s failed after %d attempts", "127.0.0.1:1", 5)
	if !strings.Contains(buf.String(), `detail="dial 127.0.0.1:1 failed after 5 attempts"`) || !strings.Contains(buf.String(), "level=WARN") {
		t.Fatalf("logged %q", buf.String())
	}
}
