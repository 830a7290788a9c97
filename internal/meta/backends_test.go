package meta

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/facet-sds/facet/internal/meta/redistest"
)

// The same suite runs on every backend: each test asks eachBackend for
// fresh, empty storage and runs once per implementation.

// storage is empty storage of one backend, and how to open a store on it.
type storage struct {
	backend string
	url     string // for OpenURL
	dataDir string
	mk      []byte
	// dump returns every byte the backend holds, to look for plaintext.
	dump func(t *testing.T) []byte
}

type backend struct {
	name  string
	setup func(t testing.TB) storage
}

var backends = []backend{
	{"bolt", func(t testing.TB) storage {
		dir := t.TempDir()
		return storage{backend: "bolt", dataDir: dir, mk: testKey(t), dump: func(t *testing.T) []byte {
			b, err := os.ReadFile(filepath.Join(dir, DefaultBoltFile))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}}
	}},
	{"redis", func(t testing.TB) storage {
		srv := redistest.Start(t)
		u := srv.URL(0, "")
		return storage{backend: "redis", url: u, dataDir: t.TempDir(), mk: testKey(t), dump: func(t *testing.T) []byte {
			return dumpRedis(t, u, "*")
		}}
	}},
}

// eachBackend runs fn once per backend, as subtests named after them.
func eachBackend(t *testing.T, fn func(t *testing.T, st storage)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { fn(t, b.setup(t)) })
	}
}

// open opens a store on st with st's master key.
func (st storage) open(ctx context.Context) (*Store, error) {
	return OpenURL(ctx, st.url, st.dataDir, st.mk, nil)
}

// store opens a store on st and closes it when the test ends.
func (st storage) store(t *testing.T) *Store {
	t.Helper()
	s, err := st.open(t.Context())
	if err != nil {
		t.Fatalf("open %s store: %v", st.backend, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func testKey(t testing.TB) []byte {
	t.Helper()
	k := make([]byte, MasterKeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

// newStore opens a fresh embedded store (for tests about bolt alone).
func newBoltStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), DefaultBoltFile), testKey(t), nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// dumpRedis returns the names and contents of every Redis key matching
// pattern, hashes and sorted sets alike.
func dumpRedis(t *testing.T, redisURL, pattern string) []byte {
	t.Helper()
	rdb := redisClient(t, redisURL)
	ctx := t.Context()
	var out bytes.Buffer
	keys, err := rdb.Keys(ctx, pattern).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		out.WriteString(k + "\n")
		typ, err := rdb.Type(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		switch typ {
		case "hash":
			m, err := rdb.HGetAll(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			for f, v := range m {
				out.WriteString(f + "=" + v + "\n")
			}
		case "zset":
			ms, err := rdb.ZRange(ctx, k, 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				out.WriteString(m + "\n")
			}
		default:
			t.Fatalf("unexpected %s key %q", typ, k)
		}
	}
	return out.Bytes()
}

func redisClient(t *testing.T, redisURL string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}
