package cache

import (
	"context"
	"os"
	"testing"
)

// Bus messages are input from other processes: any payload is dropped or
// applied, never a panic, and only a well-formed one drops an entry.
func FuzzInvalidation(f *testing.F) {
	f.Add([]byte(`{"v":1,"node":"gw-b","bucket":"bk","key":"k"}`))
	f.Add([]byte(`{"v":2,"bucket":"bk","key":"k"}`))
	f.Add([]byte(`{"v":1,"bucket":"","key":"k"}`))
	f.Add([]byte(`not json`))
	s, err := Open(context.Background(), Options{Dir: f.TempDir(), Node: "gw-a"})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	v := ver("e", 3, t0)
	f.Fuzz(func(t *testing.T, msg []byte) {
		if !s.Contains("bk", "k", v) {
			w := s.Admit(lru, "bk", "k", 3)
			w.Write([]byte("abc"))
			if err := w.Commit(v); err != nil {
				t.Fatal(err)
			}
		}
		s.onInvalidation(Subject, msg)
	})
}

// Sidecars are read back from disk at start: whatever a crash or a hand
// left there is loaded only when it names a whole data file.
func FuzzSidecar(f *testing.F) {
	f.Add([]byte(`{"id":"x","bucket":"bk","key":"k","ver":{"etag":"e","size":3},"psize":1048576,"pevict":"lru","crc":1}`))
	f.Add([]byte(`{"id":"x","bucket":"","ver":{"size":-1}}`))
	f.Add([]byte(`[]`))
	dir := f.TempDir()
	s, err := Open(context.Background(), Options{Dir: dir})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	if err := os.WriteFile(s.dataPath("x"), []byte("abc"), 0o600); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, sidecar []byte) {
		if err := os.WriteFile(s.metaPath("x"), sidecar, 0o600); err != nil {
			t.Fatal(err)
		}
		e, err := s.readMeta("x")
		if err != nil {
			return
		}
		if e.ID != "x" || e.Bucket == "" || e.Ver.Size != 3 || e.PSize <= 0 || (e.PEvict != "lru" && e.PEvict != "lfu") {
			t.Fatalf("accepted %+v", e)
		}
	})
}
