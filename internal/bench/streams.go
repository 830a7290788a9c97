package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"
	"unsafe"

	"github.com/facet-sds/facet/internal/flowctx"
	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/storage/fs"
)

// The I/O threading benchmark of seeds/003 (Fig. 1-4): n concurrent GET
// streams of large objects read from the disk (page cache dropped first)
// through the embedded store, with one OS thread per stream against the
// round-robin thread pool, in the same run. Per-stream bandwidth, Jain's
// fairness index and total throughput for each.

// StreamsOptions configure RunStreams.
type StreamsOptions struct {
	Dir         string
	Size        int64 // object size (default 256 MiB)
	Concurrency []int // default 2, 4, 8, 16, 32
	// DropCaches also writes 3 to /proc/sys/vm/drop_caches before each
	// run (root only, and the whole machine's cache); by default only this
	// benchmark's files are evicted (fdatasync + POSIX_FADV_DONTNEED).
	DropCaches  bool
	PoolThreads int
	// ChunkSize and ReadAhead tune both models alike (fs.StreamOptions).
	ChunkSize, ReadAhead int
	// Reps is how many times each model runs at each concurrency
	// (default 3); the run with the median total is reported.
	Reps int
}

// StreamsRow is one model at one concurrency.
type StreamsRow struct {
	Model       string    `json:"model"`
	Streams     int       `json:"streams"`
	TotalMBps   float64   `json:"total_mbps"`
	PerStream   []float64 `json:"per_stream_mbps"`
	Jain        float64   `json:"jain"`
	MinMBps     float64   `json:"min_mbps"`
	MaxMBps     float64   `json:"max_mbps"`
	CacheMethod string    `json:"cache"`
	// Runs, TotalLow and TotalHigh: how many runs, and the range of
	// their totals (the row is the median run).
	Runs      int     `json:"runs"`
	TotalLow  float64 `json:"total_low_mbps"`
	TotalHigh float64 `json:"total_high_mbps"`
}

// Jain is Jain's fairness index of xs: (Σx)² / (n·Σx²), 1 when all equal.
func Jain(xs []float64) float64 {
	var s, s2 float64
	for _, x := range xs {
		s += x
		s2 += x * x
	}
	if s2 == 0 {
		return 0
	}
	return s * s / (float64(len(xs)) * s2)
}

// RunStreams runs the benchmark; it writes progress to logw.
func RunStreams(ctx context.Context, o StreamsOptions, logw io.Writer) ([]StreamsRow, error) {
	if o.Size <= 0 {
		o.Size = 256 << 20
	}
	if len(o.Concurrency) == 0 {
		o.Concurrency = []int{2, 4, 8, 16, 32}
	}
	n := slices.Max(o.Concurrency)
	models := []fs.IOModel{fs.IOPerStream, fs.IOPool}
	dir := filepath.Join(o.Dir, "streams")
	// One store directory written once; each model opens it in turn.
	st, err := fs.Open(ctx, dir, fs.Options{NoSync: true})
	if err != nil {
		return nil, err
	}
	if err := st.CreateBucket(ctx, "s"); err != nil && !errors.Is(err, storage.ErrBucketExists) {
		_ = st.Close()
		return nil, err
	}
	fmt.Fprintf(logw, "writing %d objects of %d MiB...\n", n, o.Size>>20)
	paths := make([]string, n)
	for i := range n {
		key := fmt.Sprintf("obj-%03d", i)
		if _, err := st.HeadObject(ctx, "s", key); err != nil {
			if _, err := st.PutObject(ctx, "s", key, storage.PutInput{Body: io.LimitReader(pattern{}, o.Size)}); err != nil {
				_ = st.Close()
				return nil, err
			}
		}
		loc, err := st.Locate(ctx, "s", key)
		if err != nil {
			_ = st.Close()
			return nil, err
		}
		paths[i] = loc.FS.Path
	}
	if err := st.Close(); err != nil {
		return nil, err
	}
	// Write every object back before measuring anything: a writeback in
	// progress would take the disk from the first runs.
	fmt.Fprintf(logw, "syncing...\n")
	if _, err := evict(paths, false); err != nil {
		return nil, err
	}
	if o.Reps <= 0 {
		o.Reps = 3
	}
	var rows []StreamsRow
	for _, c := range o.Concurrency {
		runs := map[fs.IOModel][]StreamsRow{}
		for r := range o.Reps {
			// ABBA order: neither model always runs first on a disk
			// (and a machine) that drifts.
			order := models
			if r%2 == 1 {
				order = []fs.IOModel{models[1], models[0]}
			}
			for _, m := range order {
				row, err := streamsModel(ctx, dir, m, o, paths[:c], c)
				if err != nil {
					return nil, err
				}
				fmt.Fprintf(logw, "%-10s %2d streams: %7.1f MB/s total, Jain %.3f\n", m, c, row.TotalMBps, row.Jain)
				runs[m] = append(runs[m], row)
			}
		}
		for _, m := range models {
			rows = append(rows, medianRun(runs[m]))
		}
	}
	return rows, nil
}

// streamsModel opens the store with model m and measures c streams once.
func streamsModel(ctx context.Context, dir string, m fs.IOModel, o StreamsOptions, paths []string, c int) (StreamsRow, error) {
	s, err := fs.Open(ctx, dir, fs.Options{NoSync: true, Streams: fs.StreamOptions{Model: m, PoolThreads: o.PoolThreads, ChunkSize: o.ChunkSize, ReadAhead: o.ReadAhead}})
	if err != nil {
		return StreamsRow{}, err
	}
	defer s.Close()
	method, err := evict(paths, o.DropCaches)
	if err != nil {
		return StreamsRow{}, err
	}
	row, err := streamsOnce(ctx, s, c, o.Size)
	row.Model, row.CacheMethod = string(m), method
	return row, err
}

// medianRun is the run with the median total throughput, with the range
// of totals over all runs.
func medianRun(runs []StreamsRow) StreamsRow {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b StreamsRow) int { return cmp.Compare(a.TotalMBps, b.TotalMBps) })
	r := sorted[len(sorted)/2]
	r.Runs, r.TotalLow, r.TotalHigh = len(runs), sorted[0].TotalMBps, sorted[len(sorted)-1].TotalMBps
	return r
}

// pattern is an endless non-zero byte stream (zeros might be stored
// sparse by some filesystems).
type pattern struct{}

func (pattern) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(i*7 + 1)
	}
	return len(p), nil
}

// evict makes the next reads of paths come from the disk.
func evict(paths []string, dropAll bool) (string, error) {
	for _, p := range paths {
		f, err := os.OpenFile(p, os.O_RDONLY, 0)
		if err != nil {
			return "", err
		}
		// Dirty pages cannot be dropped: write them back first.
		_ = syscall.Fdatasync(int(f.Fd()))
		const fadvDontNeed = 4
		_, _, e := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontNeed, 0, 0)
		_ = f.Close()
		if e != 0 {
			return "", fmt.Errorf("fadvise %s: %w", p, e)
		}
	}
	if dropAll {
		syscall.Sync()
		if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0); err != nil {
			return "", fmt.Errorf("drop caches (needs root): %w", err)
		}
		return "drop_caches", nil
	}
	return "fadvise-dontneed", nil
}

// streamsOnce reads c objects at once, each to the end, and measures each
// stream's bandwidth.
func streamsOnce(ctx context.Context, s *fs.Store, c int, size int64) (StreamsRow, error) {
	per := make([]float64, c)
	errs := make([]error, c)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range c {
		wg.Go(func() {
			<-start
			t := time.Now()
			rc, _, err := s.GetObject(ctx, "s", fmt.Sprintf("obj-%03d", i), nil)
			if err != nil {
				errs[i] = err
				return
			}
			n, err := io.Copy(io.Discard, rc)
			_ = rc.Close()
			if err == nil && n != size {
				err = fmt.Errorf("read %d of %d bytes", n, size)
			}
			errs[i] = err
			per[i] = float64(n) / 1e6 / time.Since(t).Seconds()
		})
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	wall := time.Since(t0)
	if err := errors.Join(errs...); err != nil {
		return StreamsRow{}, err
	}
	return StreamsRow{Streams: c, TotalMBps: float64(size) * float64(c) / 1e6 / wall.Seconds(), PerStream: per,
		Jain: Jain(per), MinMBps: slices.Min(per), MaxMBps: slices.Max(per)}, nil
}

// WriteStreamsTable prints the rows, per-stream model against the pool at
// each concurrency.
func WriteStreamsTable(w io.Writer, rows []StreamsRow) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "streams\tmodel\ttotal MB/s\t(range)\tper-stream min\tmax\tJain\tvs pool\t")
	pool := map[int]float64{}
	for _, r := range rows {
		if r.Model == string(fs.IOPool) {
			pool[r.Streams] = r.TotalMBps
		}
	}
	for _, r := range rows {
		ratio := "-"
		if r.Model != string(fs.IOPool) && pool[r.Streams] > 0 {
			ratio = fmt.Sprintf("%.2fx", r.TotalMBps/pool[r.Streams])
		}
		fmt.Fprintf(tw, "%d\t%s\t%.1f\t%.0f-%.0f\t%.1f\t%.1f\t%.3f\t%s\t\n", r.Streams, r.Model, r.TotalMBps, r.TotalLow, r.TotalHigh, r.MinMBps, r.MaxMBps, r.Jain, ratio)
	}
	_ = tw.Flush()
}

// ClassifyCost measures parsing x-facet-context and classifying a request
// against nine rules (the last one matching), in CPU nanoseconds per
// request of the measuring thread (CLOCK_THREAD_CPUTIME_ID), so that a
// busy machine's preemptions do not count.
func ClassifyCost(n int) (headerNs, rulesNs float64) {
	var rs flowctx.Rules
	for i := range 8 {
		rs.Rules = append(rs.Rules, flowctx.Rule{Prefix: fmt.Sprintf("data/%c/", 'a'+i), UserAgent: "spark", Class: fmt.Sprintf("c%d", i)})
	}
	rs.Rules = append(rs.Rules, flowctx.Rule{Meta: "job=etl", Class: "etl"})
	c := flowctx.Compile(rs)
	meta := func(string) string { return "etl" }
	sink := 0
	header := func() {
		for range n {
			ctx, err := flowctx.Parse("workflow=etl-42; class=compaction")
			if err != nil {
				panic(err)
			}
			r := flowctx.Request{Context: ctx, Present: true, BucketKey: "data/z/k", UserAgent: "aws-sdk-go-v2 spark", Meta: meta}
			cl, _ := c.Classify(&r)
			sink += len(cl)
		}
	}
	rules := func() {
		for range n {
			r := flowctx.Request{BucketKey: "data/z/k", UserAgent: "aws-sdk-go-v2 spark", Meta: meta}
			cl, _ := c.Classify(&r)
			sink += len(cl)
		}
	}
	headerNs = threadCPU(header) / float64(n)
	rulesNs = threadCPU(rules) / float64(n)
	if sink == 0 {
		return math.NaN(), math.NaN()
	}
	return headerNs, rulesNs
}

// threadCPU runs fn on a thread of its own and returns the CPU time it
// used, in ns (CLOCK_THREAD_CPUTIME_ID).
func threadCPU(fn func()) float64 {
	out := make(chan float64)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		now := func() float64 {
			const clockThreadCPUTime = 3
			var ts syscall.Timespec
			_, _, _ = syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
			return float64(ts.Nano())
		}
		a := now()
		fn()
		out <- now() - a
	}()
	return <-out
}
