package fs

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/storage/storagetest"
	bolt "go.etcd.io/bbolt"
)

var listKeys = []string{
	"a", "a/", "a/b", "a/b/c", "a/b/d", "a//x", "a/c", "ab", "b/x", "b/y/z", "c", "c/", "c//",
	"d/\u00e9", "d/\u00e9/f", "photos/2024/jan/1.jpg", "photos/2024/feb/2.jpg", "photos/2025/x.jpg",
	"z\u00ff", "z\u00ff/1", "\U0001F600/a", "-", "%", "%/x", "x::y::z", "x::y", "x:",
}

func TestListMatchesReference(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	for _, k := range listKeys {
		putBytes(t, s, "b", k, []byte(k))
	}
	prefixes := []string{"", "a", "a/", "a/b", "photos/", "photos/2024/", "z", "nothing", "x::"}
	delims := []string{"", "/", "//", "::", "b", "\u00e9"}
	markers := append([]string{"", "a/", "b/", "photos/2024/", "0", "zzzz"}, listKeys...)
	for _, p := range prefixes {
		for _, d := range delims {
			for _, m := range markers {
				for _, max := range []int{1, 2, 3, 1000} {
					o := storage.ListOptions{Prefix: p, Delimiter: d, Marker: m, MaxKeys: max}
					res, err := s.ListObjects(ctx, "b", o)
					if err != nil {
						t.Fatal(err)
					}
					want, wantTrunc := storagetest.RefList(listKeys, o)
					got := storagetest.Flatten(res)
					if !slices.Equal(got, want) || res.IsTruncated != wantTrunc {
						t.Fatalf("%+v:\n got %q trunc=%v\nwant %q trunc=%v", o, got, res.IsTruncated, want, wantTrunc)
					}
					if len(got) > 0 && res.NextMarker != strings.TrimPrefix(got[len(got)-1], "P:") {
						t.Fatalf("%+v: NextMarker %q, last entry %q", o, res.NextMarker, got[len(got)-1])
					}
				}
			}
		}
	}
}

// TestListPaginationReachesEveryKeyOnce pages through listings with
// NextMarker and checks each key is covered by exactly one entry.
func TestListPaginationReachesEveryKeyOnce(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	var keys []string
	for range 500 {
		var b strings.Builder
		for range 1 + rng.IntN(4) {
			if b.Len() > 0 {
				b.WriteByte('/')
			}
			b.WriteString([]string{"a", "b", "cc", "", "d\u00e9"}[rng.IntN(5)])
		}
		keys = append(keys, b.String())
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	keys = slices.DeleteFunc(keys, func(k string) bool { return k == "" })
	for _, k := range keys {
		putBytes(t, s, "b", k, nil)
	}
	for _, o := range []storage.ListOptions{
		{MaxKeys: 7}, {Delimiter: "/", MaxKeys: 3}, {Prefix: "a/", Delimiter: "/", MaxKeys: 2},
		{Prefix: "b", MaxKeys: 1}, {Delimiter: "cc", MaxKeys: 4},
	} {
		covered := map[string]int{}
		pages := 0
		for {
			res, err := s.ListObjects(ctx, "b", o)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if n := len(res.Objects) + len(res.CommonPrefixes); n > o.MaxKeys || (res.IsTruncated && n != o.MaxKeys) {
				t.Fatalf("%+v: page of %d entries, truncated=%v", o, n, res.IsTruncated)
			}
			for _, obj := range res.Objects {
				covered[obj.Key]++
			}
			for _, p := range res.CommonPrefixes {
				for _, k := range keys {
					if strings.HasPrefix(k, p) {
						covered[k]++
					}
				}
			}
			if !res.IsTruncated {
				break
			}
			o.Marker = res.NextMarker
		}
		for _, k := range keys {
			if strings.HasPrefix(k, o.Prefix) && covered[k] != 1 {
				t.Fatalf("%+v: key %q covered %d times over %d pages", o, k, covered[k], pages)
			}
		}
	}
}

// insertIndexEntries writes n object entries straight into the index, all
// sharing one data file: listing never opens data files, and 100k real PUTs
// would mostly measure the disk.
func insertIndexEntries(t testing.TB, s *Store, bucket string, keys func(i int) string, n int) {
	t.Helper()
	body := putBytes(t, s, bucket, "\U0010FFFF-shared", []byte("x"))
	rec, _, err := s.lookupVersion(bucket, body.Key, "")
	if err != nil {
		t.Fatal(err)
	}
	val, err := encode(&rec)
	if err != nil {
		t.Fatal(err)
	}
	const batch = 10000
	for start := 0; start < n; start += batch {
		err := s.db.Update(func(tx *bolt.Tx) error {
			objs, err := subOf(tx, bucket, objBucket)
			if err != nil {
				return err
			}
			objs.FillPercent = 1 // keys arrive in order
			for i := start; i < min(start+batch, n); i++ {
				if err := objs.Put([]byte(keys(i)), val); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteObject(context.Background(), bucket, body.Key); err != nil {
		t.Fatal(err)
	}
}

func TestList100k(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	const dirs, perDir = 100, 1000
	key := func(i int) string { return fmt.Sprintf("dir%03d/obj%06d", i/perDir, i%perDir) }
	insertIndexEntries(t, s, "b", key, dirs*perDir)

	start := time.Now()
	seen, pages := 0, 0
	o := storage.ListOptions{}
	for {
		res, err := s.ListObjects(ctx, "b", o)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range res.Objects {
			if obj.Key != key(seen) {
				t.Fatalf("entry %d is %q, want %q", seen, obj.Key, key(seen))
			}
			seen++
		}
		pages++
		if !res.IsTruncated {
			break
		}
		o.Marker = res.NextMarker
	}
	if seen != dirs*perDir || pages != dirs {
		t.Fatalf("listed %d keys in %d pages", seen, pages)
	}
	t.Logf("100k keys in %d pages of 1000: %v", pages, time.Since(start))

	start = time.Now()
	res, visited, err := s.listObjects(ctx, "b", storage.ListOptions{Delimiter: "/"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("delimiter listing of 100k keys: %d prefixes, %d cursor steps, %v", len(res.CommonPrefixes), visited, time.Since(start))
	if len(res.CommonPrefixes) != dirs || len(res.Objects) != 0 || res.IsTruncated {
		t.Fatalf("delimiter listing: %d prefixes, %d objects, truncated %v", len(res.CommonPrefixes), len(res.Objects), res.IsTruncated)
	}
	// A rolled-up prefix costs one seek, not one step per key under it.
	if visited > 2*dirs {
		t.Fatalf("delimiter listing visited %d entries for %d prefixes", visited, dirs)
	}

	start = time.Now()
	res, visited, err = s.listObjects(ctx, "b", storage.ListOptions{Prefix: "dir050/", Marker: "dir050/obj000499", MaxKeys: 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("page from the middle: %v", time.Since(start))
	// Steps: the marker itself, ten keys, and one proving truncation.
	if len(res.Objects) != 10 || res.Objects[0].Key != "dir050/obj000500" || !res.IsTruncated || visited > 12 {
		t.Fatalf("page from the middle: %d objects, first %q, truncated %v, visited %d", len(res.Objects), res.Objects[0].Key, res.IsTruncated, visited)
	}
}
