package integrity

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/facet-sds/facet/internal/storage"
)

// paying counts the bytes a background class was asked to pay for.
type paying struct{ admitted, bytes int64 }

func (p *paying) Admit(context.Context, string) (Work, error) { p.admitted++; return p, nil }
func (p *paying) WaitBytes(_ context.Context, n int64) error  { p.bytes += n; return nil }
func (p *paying) Done()                                       {}

func TestScrubFindsDamagedMissingUnverified(t *testing.T) {
	b, raw, dir, c := newBackend(t)
	good, bad, gone := randBytes(BlockSize+5, 1), randBytes(3*BlockSize, 2), randBytes(5000, 3)
	put(t, b, "good", good)
	put(t, b, "bad", bad)
	put(t, b, "gone", gone)
	put(t, raw, "old", randBytes(100, 4))
	flip(t, dir, bad, 2*BlockSize+1)
	// The data file of "gone" disappears.
	removed := 0
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if data, _ := os.ReadFile(path); bytes.Equal(data, gone) {
				removed++
				return os.Remove(path)
			}
		}
		return err
	})
	if removed != 1 {
		t.Fatalf("removed %d files", removed)
	}
	bg := &paying{}
	s := NewScrubber(ScrubConfig{Backend: raw, Failures: c, Background: bg})
	if _, err := s.Start(context.Background(), "t", "b", []BucketRef{{Tenant: "t", Bucket: "b"}}); err != nil {
		t.Fatal(err)
	}
	s.Wait()
	rep, ok := s.Status()
	if !ok || rep.State != ScrubDone || rep.Objects != 4 || rep.OK != 1 || rep.Damaged != 1 || rep.Missing != 1 || rep.Unverified != 1 {
		t.Fatalf("report %+v", rep)
	}
	var got []string
	for _, f := range rep.Findings {
		got = append(got, f.Key+":"+f.Result)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"bad:damaged", "gone:missing", "old:unverified"}) {
		t.Fatalf("findings %v", got)
	}
	if bg.admitted != 4 || bg.bytes == 0 || bg.bytes != rep.Bytes {
		t.Fatalf("background class: %d admitted, %d bytes paid; report %d bytes", bg.admitted, bg.bytes, rep.Bytes)
	}
	if c.n != 1 {
		t.Fatalf("%d failures reported, want 1", c.n)
	}
}

func TestScrubOneAtATime(t *testing.T) {
	_, raw, _, _ := newBackend(t)
	s := NewScrubber(ScrubConfig{Backend: raw})
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the run ends at once, failed
	s.mu.Lock()
	s.last = &ScrubReport{State: ScrubRunning}
	s.mu.Unlock()
	if _, err := s.Start(ctx, "", "", nil); !errors.Is(err, ErrScrubRunning) {
		t.Fatalf("second start: %v", err)
	}
}

// In a bucket that keeps versions every version is scrubbed, and a
// damaged older one is reported by its id.
func TestScrubVersions(t *testing.T) {
	b, raw, dir, _ := newBackend(t)
	ctx := context.Background()
	if err := raw.(storage.Versions).SetVersioning(ctx, "b", storage.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	old := randBytes(BlockSize+7, 21)
	first := put(t, b, "k", old)
	put(t, b, "k", randBytes(99, 22))
	if err := b.DeleteObject(ctx, "b", "gone"); err != nil { // a marker alone
		t.Fatal(err)
	}
	flip(t, dir, old, 5)
	s := NewScrubber(ScrubConfig{Backend: raw})
	if _, err := s.Start(ctx, "", "b", []BucketRef{{Tenant: "t", Bucket: "b"}}); err != nil {
		t.Fatal(err)
	}
	s.Wait()
	rep, _ := s.Status()
	if rep.State != ScrubDone || rep.Objects != 2 || rep.OK != 1 || rep.Damaged != 1 || len(rep.Findings) != 1 ||
		rep.Findings[0].VersionID != first.VersionID || rep.Findings[0].Key != "k" {
		t.Fatalf("report %+v", rep)
	}
}
