package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/storage/fs"
)

// What keeping versions costs (issue 20): one filesystem store with two
// buckets, one never versioned and one with versioning Enabled, driven
// alike in alternating rounds of one run: PUT throughput of 4 KiB and
// 1 MiB objects (overwrites of a working set, so the versioned bucket
// keeps every version), GET latency of the latest version, and a listing
// of N entries page by page (ListObjectVersions of N versions against
// ListObjects of N keys). In process, at the storage layer, where the
// version index lives; without fsync, so the index's cost is not hidden
// behind the disk's.

// VersioningRow is one measure, the versioned bucket against the plain.
type VersioningRow struct {
	What              string
	Unit              string
	Plain, Versioned  float64
	HigherIsBetter    bool
	PlainN, VersionsN int
}

// VersioningReport is the run's figures.
type VersioningReport struct {
	Rows []VersioningRow
	Keys int
}

const (
	benchPlain     = "plain"
	benchVersioned = "versioned"
)

// RunVersioning measures in dir. puts is how many 4 KiB PUTs per bucket
// (1 MiB PUTs get a twentieth); keys is the listing's size.
func RunVersioning(ctx context.Context, dir string, puts, keys int) (VersioningReport, error) {
	rep := VersioningReport{Keys: keys}
	st, err := fs.Open(ctx, dir, fs.Options{NoSync: true})
	if err != nil {
		return rep, err
	}
	defer st.Close()
	for _, b := range []string{benchPlain, benchVersioned} {
		if err := st.CreateBucket(ctx, b); err != nil {
			return rep, err
		}
	}
	if err := st.SetVersioning(ctx, benchVersioned, storage.VersioningEnabled); err != nil {
		return rep, err
	}
	put := func(bucket, key string, body []byte) error {
		n := int64(len(body))
		_, err := st.PutObject(ctx, bucket, key, storage.PutInput{Body: bytes.NewReader(body),
			Seal: func(m *storage.ObjectMeta) error { m.Size, m.ETag = n, "e"; return nil }})
		return err
	}
	// PUT throughput: 8 writers over a working set of 64 keys, rounds
	// alternating between the buckets.
	for _, size := range []int{4 << 10, 1 << 20} {
		n := puts
		if size > 4<<10 {
			n = max(40, puts/20)
		}
		body := textLike(size)
		var took [2]time.Duration
		const rounds = 4
		for r := range rounds * 2 {
			b := []string{benchPlain, benchVersioned}[(r+r/2)%2]
			t := time.Now()
			if err := parallel(8, n/rounds, func(i int) error {
				return put(b, fmt.Sprintf("w/%d-%02d", size, i%64), body)
			}); err != nil {
				return rep, err
			}
			took[map[string]int{benchPlain: 0, benchVersioned: 1}[b]] += time.Since(t)
		}
		ops := float64(n/rounds*rounds) / 1
		rep.Rows = append(rep.Rows, VersioningRow{What: "PUT " + sizeLabel(int64(size)) + " (8 writers)", Unit: "PUT/s",
			Plain: ops / took[0].Seconds(), Versioned: ops / took[1].Seconds(), HigherIsBetter: true, PlainN: n, VersionsN: n})
	}
	// GET of the latest version: the 4 KiB working set, which in the
	// versioned bucket has a long history behind each key.
	var lat [2][]time.Duration
	for i := range puts {
		for j, b := range []string{benchPlain, benchVersioned} {
			if i%2 == 1 {
				b = []string{benchVersioned, benchPlain}[j]
			}
			t := time.Now()
			rc, _, err := st.GetObject(ctx, b, fmt.Sprintf("w/%d-%02d", 4<<10, i%64), nil)
			if err != nil {
				return rep, err
			}
			_, err = io.Copy(io.Discard, rc)
			rc.Close()
			if err != nil {
				return rep, err
			}
			lat[map[string]int{benchPlain: 0, benchVersioned: 1}[b]] = append(lat[map[string]int{benchPlain: 0, benchVersioned: 1}[b]], time.Since(t))
		}
	}
	rep.Rows = append(rep.Rows, VersioningRow{What: "GET 4KiB latest (median)", Unit: "µs",
		Plain: float64(medianDur(lat[0]).Microseconds()), Versioned: float64(medianDur(lat[1]).Microseconds()), PlainN: puts, VersionsN: puts})

	// Listing: keys objects in the plain bucket; keys versions (keys/4
	// keys of 4 versions) in the versioned one.
	small := []byte("x")
	if err := parallel(8, keys, func(i int) error {
		if err := put(benchPlain, fmt.Sprintf("l/%08d", i), small); err != nil {
			return err
		}
		return put(benchVersioned, fmt.Sprintf("l/%08d", i/4), small)
	}); err != nil {
		return rep, err
	}
	var best [2]time.Duration
	for r := range 6 {
		for _, versioned := range []bool{r%2 == 0, r%2 != 0} {
			t := time.Now()
			n, err := listAll(ctx, st, versioned)
			if err != nil {
				return rep, err
			}
			if n != keys {
				return rep, fmt.Errorf("listed %d entries, want %d", n, keys)
			}
			i := 0
			if versioned {
				i = 1
			}
			if d := time.Since(t); best[i] == 0 || d < best[i] {
				best[i] = d
			}
		}
	}
	rep.Rows = append(rep.Rows, VersioningRow{What: fmt.Sprintf("list %d entries, pages of 1000 (best of 6)", keys), Unit: "entries/s",
		Plain: float64(keys) / best[0].Seconds(), Versioned: float64(keys) / best[1].Seconds(), HigherIsBetter: true, PlainN: keys, VersionsN: keys})
	return rep, nil
}

// listAll pages through the listing prefix l/: ListObjects of the plain
// bucket, or ListObjectVersions of the versioned one.
func listAll(ctx context.Context, st *fs.Store, versioned bool) (int, error) {
	n := 0
	if !versioned {
		opts := storage.ListOptions{Prefix: "l/", MaxKeys: 1000}
		for {
			page, err := st.ListObjects(ctx, benchPlain, opts)
			if err != nil {
				return n, err
			}
			n += len(page.Objects)
			if !page.IsTruncated {
				return n, nil
			}
			opts.Marker = page.NextMarker
		}
	}
	opts := storage.ListVersionsOptions{Prefix: "l/", MaxKeys: 1000}
	for {
		page, err := st.ListObjectVersions(ctx, benchVersioned, opts)
		if err != nil {
			return n, err
		}
		n += len(page.Versions)
		if !page.IsTruncated {
			return n, nil
		}
		opts.KeyMarker, opts.VersionIDMarker = page.NextKeyMarker, page.NextVersionIDMarker
	}
}

// parallel runs fn(0..n-1) on w goroutines and returns the first error.
func parallel(w, n int, fn func(i int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		next int
		ferr error
	)
	for range w {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				stop := ferr != nil || i >= n
				mu.Unlock()
				if stop {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					ferr = err
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return ferr
}

// WriteVersioning prints the report as a markdown table.
func WriteVersioning(w io.Writer, rep VersioningReport) {
	fmt.Fprintln(w, "| measure | never-versioned bucket | versioned bucket | versioned / plain |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, r := range rep.Rows {
		ratio := r.Versioned / r.Plain
		if !r.HigherIsBetter {
			ratio = r.Plain / r.Versioned
		}
		fmt.Fprintf(w, "| %s | %.0f %s | %.0f %s | %.2f× |\n", r.What, r.Plain, r.Unit, r.Versioned, r.Unit, ratio)
	}
	fmt.Fprintln(w, "\n(ratios > 1 favour the versioned bucket; for latency the ratio is plain / versioned)")
}
