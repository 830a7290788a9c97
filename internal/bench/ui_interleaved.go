package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// UIInterleavedResult compares two identical servers measured at the same
// moments, one with dashboards open: the machine's load weighs on both
// alike at every instant, which a comparison of batches taken in turns
// cannot promise on a busy machine.
type UIInterleavedResult struct {
	Dashboards int
	Rounds     []UIInterleavedRound
	// ThroughputRatio is the geometric mean over rounds of mean GET latency
	// without dashboards over mean latency with them: with a fixed number
	// of clients, the ratio of throughputs each server would sustain.
	ThroughputRatio float64
	// CPURatio is the geometric mean of server CPU per GET, with over
	// without dashboards.
	CPURatio           float64
	Events, EventBytes int64
}

// UIInterleavedRound is one round: which server had the dashboards, and
// each side's mean latency and CPU per GET (index 0 without, 1 with).
type UIInterleavedRound struct {
	WithDashboards int
	GETs           int
	MeanLatency    [2]time.Duration
	CPUPerOp       [2]time.Duration
}

// RunUIInterleaved starts two `facet serve` processes with the same 1,000
// objects and sends sc.Ops 4 KiB GETs from sc.Concurrency workers, each
// GET to the servers in turn; one server has n dashboards streaming, and
// which one alternates between rounds (cancelling what differs between the
// two processes).
func RunUIInterleaved(ctx context.Context, dir string, sc SpineScenario, n, rounds int, logw io.Writer) (UIInterleavedResult, error) {
	res := UIInterleavedResult{Dashboards: n}
	dir, err := os.MkdirTemp(dir, "ui-pair-*")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	const keys = 1000
	payload := textLike(int(sc.Size))
	var gws [2]*gateway
	var procs [2]*serveProcess
	for i := range 2 {
		g, p, err := startServeProcess(ctx, filepath.Join(dir, fmt.Sprint(i)))
		if err != nil {
			return res, err
		}
		defer g.stop()
		if err := g.do(ctx, http.MethodPut, "/bench", nil, 0, nil); err != nil {
			return res, fmt.Errorf("create bucket: %w", err)
		}
		put := func(k int) error { return g.do(ctx, http.MethodPut, "/bench/"+objKey(sc, k), payload, sc.Size, nil) }
		if m := measure("populate", SpineScenario{Size: sc.Size, Ops: keys, Concurrency: sc.Concurrency}, put); m.err != nil {
			return res, m.err
		}
		gws[i], procs[i] = g, p
	}
	get := func(g *gateway, k int) error {
		return g.do(ctx, http.MethodGet, "/bench/"+objKey(sc, k%keys), nil, 0, func(r io.Reader) error { return drain(r, sc.Size) })
	}
	// Warm both up (caches, connections) before anything is measured.
	warm := SpineScenario{Size: sc.Size, Ops: 2 * keys, Concurrency: sc.Concurrency}
	for _, g := range gws {
		if m := measure("warm-up", warm, func(i int) error { return get(g, i) }); m.err != nil {
			return res, m.err
		}
	}
	var lat, cpu []float64
	for r := range rounds {
		with := r % 2
		fmt.Fprintf(logw, "ui overhead (interleaved): round %d/%d, dashboards on server %d ...\n", r+1, rounds, with)
		dash, err := openDashboards(ctx, gws[with].adminURL, gws[with].token, n)
		if err != nil {
			return res, err
		}
		var sum [2]atomic.Int64 // latency, ns, per server
		c0 := [2]time.Duration{procs[0].cpu(), procs[1].cpu()}
		m := measure("interleaved", SpineScenario{Size: sc.Size, Ops: sc.Ops, Concurrency: sc.Concurrency}, func(i int) error {
			s, t0 := i%2, time.Now()
			err := get(gws[s], i/2)
			sum[s].Add(int64(time.Since(t0)))
			return err
		})
		c1 := [2]time.Duration{procs[0].cpu(), procs[1].cpu()}
		ev, b, _ := dash.close()
		res.Events, res.EventBytes = res.Events+ev, res.EventBytes+b
		if m.err != nil {
			return res, m.err
		}
		per := sc.Ops / 2
		rd := UIInterleavedRound{WithDashboards: with, GETs: sc.Ops}
		for s := range 2 {
			side := 0
			if s == with {
				side = 1
			}
			rd.MeanLatency[side] = time.Duration(sum[s].Load() / int64(per))
			rd.CPUPerOp[side] = (c1[s] - c0[s]) / time.Duration(per)
		}
		res.Rounds = append(res.Rounds, rd)
		lat = append(lat, float64(rd.MeanLatency[0])/float64(rd.MeanLatency[1]))
		cpu = append(cpu, float64(rd.CPUPerOp[1])/float64(rd.CPUPerOp[0]))
		fmt.Fprintf(logw, "  mean GET latency %v without, %v with; CPU/GET %v without, %v with\n",
			rd.MeanLatency[0], rd.MeanLatency[1], rd.CPUPerOp[0], rd.CPUPerOp[1])
	}
	if res.Events == 0 {
		return res, fmt.Errorf("the dashboards received no event")
	}
	res.ThroughputRatio, res.CPURatio = geomean(lat), geomean(cpu)
	return res, nil
}

// WriteUIInterleaved prints the rounds and their summary as Markdown.
func WriteUIInterleaved(w io.Writer, r UIInterleavedResult) {
	fmt.Fprintln(w, "| round | dashboards on | mean GET latency without | with | CPU µs/GET without | with |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|")
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	for i, rd := range r.Rounds {
		fmt.Fprintf(w, "| %d | server %d | %.1f µs | %.1f µs | %.1f | %.1f |\n", i+1, rd.WithDashboards,
			us(rd.MeanLatency[0]), us(rd.MeanLatency[1]), us(rd.CPUPerOp[0]), us(rd.CPUPerOp[1]))
	}
	fmt.Fprintf(w, "\nGET throughput with %d dashboards / without (mean latency ratio, geometric mean of rounds): %.3f; server CPU per GET with / without: %.3f (%+.1f%%).\n",
		r.Dashboards, r.ThroughputRatio, r.CPURatio, 100*(r.CPURatio-1))
}
