package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// UIOverheadResult is what open dashboards cost the data path: 4 KiB GETs
// through one facet serve with no dashboard open and with Dashboards of
// them streaming the live plots.
type UIOverheadResult struct {
	Dashboards int
	Rows       []Comparison
	Summary    []OverheadSummary
	// Events is how many server-sent events the dashboards received while
	// they were open, and EventBytes their size: proof they streamed.
	Events, EventBytes int64
	Open               time.Duration
	// PairRatios are each round's GET throughput ratio (dashboards / none),
	// in round order: their spread shows the machine's noise.
	PairRatios []float64
	// IdleCPUOff and IdleCPUOn are the server's CPU time per second of wall
	// time with no load, without and with the dashboards open: their
	// difference is what the dashboards cost, whatever the noise of the
	// throughput comparison.
	IdleCPUOff, IdleCPUOn time.Duration
}

// RunUIOverhead measures 4 KiB GETs (sc) through one `facet serve`
// process, in batches that take turns: no dashboard open, then n
// dashboards signed in and streaming /ui/api/events (each also reading the
// policy list every 3 seconds, as the Policies page does), and so on for
// rounds pairs. The same server serves both sides, so the only difference
// is the dashboards; the turns make the machine's load weigh on both
// alike. Throughput ratio and server CPU per GET are the geometric means
// of the pairs' ratios.
func RunUIOverhead(ctx context.Context, dir string, sc SpineScenario, n, rounds int, logw io.Writer) (UIOverheadResult, error) {
	res := UIOverheadResult{Dashboards: n}
	dir, err := os.MkdirTemp(dir, "ui-*")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	g, proc, err := startServeProcess(ctx, filepath.Join(dir, "serve"))
	if err != nil {
		return res, err
	}
	defer g.stop()
	if err := g.do(ctx, http.MethodPut, "/bench", nil, 0, nil); err != nil {
		return res, fmt.Errorf("create bucket: %w", err)
	}
	payload := textLike(int(sc.Size))
	// A thousand objects, read round-robin: the GETs measure the path, not
	// the population.
	const keys = 1000
	put := func(i int) error { return g.do(ctx, http.MethodPut, "/bench/"+objKey(sc, i), payload, sc.Size, nil) }
	get := func(i int) error {
		return g.do(ctx, http.MethodGet, "/bench/"+objKey(sc, i%keys), nil, 0, func(r io.Reader) error { return drain(r, sc.Size) })
	}
	if m := measure("populate", SpineScenario{Size: sc.Size, Ops: keys, Concurrency: sc.Concurrency}, put); m.err != nil {
		return res, m.err
	}
	if m := measure("warm-up", SpineScenario{Size: sc.Size, Ops: keys, Concurrency: sc.Concurrency}, get); m.err != nil {
		return res, m.err
	}
	if res.IdleCPUOff, res.IdleCPUOn, err = idleCost(ctx, g, proc, n, 3, 3*time.Second, &res, logw); err != nil {
		return res, err
	}
	label := fmt.Sprintf("GET %s c=%d", sizeLabel(sc.Size), sc.Concurrency)
	batch := SpineScenario{Size: sc.Size, Ops: max(sc.Ops/rounds, 1), Concurrency: sc.Concurrency}
	var results [2][]Result
	var cpu [2][]time.Duration
	var ratios, cpuRatios []float64
	for r := range rounds {
		fmt.Fprintf(logw, "ui overhead %s: round %d/%d ...\n", label, r+1, rounds)
		var pair [2]Result
		var pairCPU [2]time.Duration
		order := []int{0, 1}
		if r%2 == 1 {
			order = []int{1, 0}
		}
		for _, which := range order {
			var dash *dashboards
			if which == 1 {
				if dash, err = openDashboards(ctx, g.adminURL, g.token, n); err != nil {
					return res, err
				}
			}
			c0 := proc.cpu()
			m := measure([2]string{"no dashboard", fmt.Sprintf("%d dashboards", n)}[which], batch, get)
			pairCPU[which] = (proc.cpu() - c0) / time.Duration(max(m.Ops, 1))
			if dash != nil {
				ev, b, open := dash.close()
				res.Events, res.EventBytes, res.Open = res.Events+ev, res.EventBytes+b, res.Open+open
			}
			if m.err != nil {
				return res, m.err
			}
			pair[which] = m.Result
		}
		for which := range 2 {
			results[which] = append(results[which], pair[which])
			cpu[which] = append(cpu[which], pairCPU[which])
		}
		ratios = append(ratios, pair[1].OpsPerSec()/pair[0].OpsPerSec())
		fmt.Fprintf(logw, "  none %.0f GET/s, %d dashboards %.0f GET/s: ratio %.3f\n", pair[0].OpsPerSec(), n, pair[1].OpsPerSec(), ratios[len(ratios)-1])
		cpuRatios = append(cpuRatios, float64(pairCPU[1])/float64(pairCPU[0]))
	}
	if res.Events == 0 {
		return res, fmt.Errorf("the dashboards received no event: the measurement would not show their cost")
	}
	res.PairRatios = ratios
	res.Rows = []Comparison{{Op: label, Direct: combine(results[0]), Facet: combine(results[1])}}
	res.Summary = []OverheadSummary{{Op: label, ThroughputRatio: geomean(ratios), CPURatio: geomean(cpuRatios),
		CPUOff: median(cpu[0]), CPUOn: median(cpu[1])}}
	return res, nil
}

// idleCost measures the server's CPU per second of wall time with no
// request load, in turns without and with n dashboards open (pairs
// turns of span each); it returns the medians.
func idleCost(ctx context.Context, g *gateway, proc *serveProcess, n, pairs int, span time.Duration, res *UIOverheadResult, logw io.Writer) (off, on time.Duration, err error) {
	var offs, ons []time.Duration
	for i := range pairs {
		fmt.Fprintf(logw, "ui overhead: idle CPU, pair %d/%d ...\n", i+1, pairs)
		for which := range 2 {
			var dash *dashboards
			if which == 1 {
				if dash, err = openDashboards(ctx, g.adminURL, g.token, n); err != nil {
					return 0, 0, err
				}
			}
			t0, c0 := time.Now(), proc.cpu()
			select {
			case <-ctx.Done():
				return 0, 0, ctx.Err()
			case <-time.After(span):
			}
			perSec := time.Duration(float64(proc.cpu()-c0) / time.Since(t0).Seconds())
			if dash != nil {
				ev, b, open := dash.close()
				res.Events, res.EventBytes, res.Open = res.Events+ev, res.EventBytes+b, res.Open+open
				ons = append(ons, perSec)
			} else {
				offs = append(offs, perSec)
			}
		}
	}
	return median(offs), median(ons), nil
}

// dashboards are n signed-in dashboard sessions streaming the live plots.
type dashboards struct {
	cancel       context.CancelFunc
	wg           sync.WaitGroup
	events, size atomic.Int64
	opened       time.Time
	errs         chan error
}

// openDashboards signs n dashboards in with the admin token and opens
// their event streams; it returns once each has received its first event.
func openDashboards(ctx context.Context, adminURL, token string, n int) (*dashboards, error) {
	ctx, cancel := context.WithCancel(ctx)
	d := &dashboards{cancel: cancel, opened: time.Now(), errs: make(chan error, n)}
	ready := make(chan struct{}, n)
	for range n {
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, adminURL+"/ui/api/login", strings.NewReader(`{"token":"`+token+`"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("dashboard sign-in: %w", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			cancel()
			return nil, fmt.Errorf("dashboard sign-in: status %d", resp.StatusCode)
		}
		d.wg.Add(2)
		go func() {
			defer d.wg.Done()
			d.errs <- d.stream(ctx, c, adminURL, ready)
		}()
		go func() {
			defer d.wg.Done()
			pollPolicies(ctx, c, adminURL)
		}()
	}
	for range n {
		select {
		case <-ready:
		case err := <-d.errs:
			d.close()
			return nil, fmt.Errorf("dashboard stream: %w", err)
		case <-time.After(10 * time.Second):
			d.close()
			return nil, fmt.Errorf("dashboard stream: no first event within 10 s")
		}
	}
	return d, nil
}

func (d *dashboards) stream(ctx context.Context, c *http.Client, adminURL string, ready chan<- struct{}) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, adminURL+"/ui/api/events", nil)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	first := true
	for sc.Scan() {
		line := sc.Bytes()
		d.size.Add(int64(len(line) + 1))
		if len(line) > 6 && string(line[:6]) == "event:" {
			d.events.Add(1)
			if first {
				first = false
				ready <- struct{}{}
			}
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return sc.Err()
}

// pollPolicies reads the policy view every 3 seconds, as an open
// Policies page does.
func pollPolicies(ctx context.Context, c *http.Client, adminURL string) {
	t := time.NewTicker(3 * time.Second)
	defer t.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, adminURL+"/ui/api/policies", nil)
		if resp, err := c.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// close ends the streams and returns the events and bytes they received
// and how long they were open.
func (d *dashboards) close() (events, size int64, open time.Duration) {
	d.cancel()
	d.wg.Wait()
	return d.events.Load(), d.size.Load(), time.Since(d.opened)
}

// WriteUIOverhead prints the comparison as a Markdown table (the
// rounds' median ratio, robust to a round the machine's load spoiled, and
// their geometric mean), then the rounds' spread and the idle cost.
func WriteUIOverhead(w io.Writer, r UIOverheadResult) {
	sorted := slices.Clone(r.PairRatios)
	slices.Sort(sorted)
	med := 0.0
	if len(sorted) > 0 {
		med = sorted[len(sorted)/2]
	}
	fmt.Fprintf(w, "| op | GET throughput %d dashboards / none: median of rounds | geometric mean | server CPU µs/op none (median) | server CPU µs/op %d dashboards (median) | server CPU change (geometric mean of rounds) |\n", r.Dashboards, r.Dashboards)
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	for _, s := range r.Summary {
		fmt.Fprintf(w, "| %s | %.3f | %.3f | %.1f | %.1f | %+.1f%% |\n", s.Op, med, s.ThroughputRatio,
			float64(s.CPUOff.Nanoseconds())/1e3, float64(s.CPUOn.Nanoseconds())/1e3, 100*(s.CPURatio-1))
	}
	if len(sorted) > 0 {
		fmt.Fprintf(w, "\nPer-round GET throughput ratios: min %.3f, median %.3f, max %.3f (%d rounds).\n",
			sorted[0], med, sorted[len(sorted)-1], len(sorted))
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Fprintf(w, "Idle server CPU per second: %.2f ms with no dashboard, %.2f ms with %d dashboards (%+.2f ms/s, %.3f%% of one core).\n",
		ms(r.IdleCPUOff), ms(r.IdleCPUOn), r.Dashboards, ms(r.IdleCPUOn-r.IdleCPUOff), 100*(r.IdleCPUOn-r.IdleCPUOff).Seconds())
}
