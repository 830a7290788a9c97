package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/facet-sds/facet/internal/bus"
	"github.com/facet-sds/facet/internal/metrics"
	"github.com/facet-sds/facet/internal/s3api"
	"github.com/facet-sds/facet/internal/server"
)

// MetricsOverheadResult is what workload metrics cost the data path, and
// the bus traffic of the gateway that measured.
type MetricsOverheadResult struct {
	Rows    []Comparison
	Summary []OverheadSummary
	// BusBytesPerPeriod and BusMsgsPerPeriod are the broker's traffic (in
	// and out) per metric period while the metrics-on gateway was loaded.
	BusBytesPerPeriod, BusMsgsPerPeriod float64
	Metrics                             int
	Period                              time.Duration
}

// OverheadSummary compares metrics on and off for one operation with
// figures that resist a noisy machine: the median over rounds of the
// throughput ratio, and the process CPU time per operation (client
// included, the same on both sides).
type OverheadSummary struct {
	Op string
	// ThroughputRatio is on/off ops/s, the median of the rounds' ratios.
	ThroughputRatio float64
	// CPUOff and CPUOn are the median CPU time per operation.
	CPUOff, CPUOn time.Duration
}

// RunMetricsOverhead measures 4 KiB PUT and GET through two `facet serve`
// in this process, one with workload metrics off and one with them on,
// in alternating rounds so that drift and noise hit both alike. The
// metrics-on gateway joins a bus the benchmark runs, whose counters give
// the monitoring traffic.
func RunMetricsOverhead(ctx context.Context, dir string, sc SpineScenario, rounds int, logw io.Writer) (MetricsOverheadResult, error) {
	var res MetricsOverheadResult
	srv, err := bus.StartServer(bus.ServerOptions{Name: "bench", Addr: "127.0.0.1:0"})
	if err != nil {
		return res, err
	}
	defer srv.Close()
	dir, err = os.MkdirTemp(dir, "metrics-*")
	if err != nil {
		return res, err
	}
	off, err := startGateway(ctx, filepath.Join(dir, "off"), func(o *server.Options) { o.NoWorkloadMetrics, o.NoSync = true, true })
	if err != nil {
		return res, err
	}
	defer off.stop()
	on, err := startGateway(ctx, filepath.Join(dir, "on"), func(o *server.Options) { o.BusURL, o.NoSync = srv.URL(), true })
	if err != nil {
		return res, err
	}
	defer on.stop()
	for _, g := range []*gateway{off, on} {
		if err := g.do(ctx, http.MethodPut, "/bench", nil, 0, nil); err != nil {
			return res, fmt.Errorf("create bucket: %w", err)
		}
	}
	payload := textLike(int(sc.Size))
	label := fmt.Sprintf("%s c=%d", sizeLabel(sc.Size), sc.Concurrency)
	type side struct {
		res []Result
		cpu []time.Duration // per op
	}
	var puts, gets [2]side // off, on
	run := func(sd *side, name string, op func(i int) error) error {
		c0 := processCPU()
		m := measure(name, sc, op)
		c1 := processCPU()
		if m.err != nil {
			return fmt.Errorf("%s: %w", name, m.err)
		}
		sd.res = append(sd.res, m.Result)
		sd.cpu = append(sd.cpu, (c1[0]+c1[1]-c0[0]-c0[1])/time.Duration(m.Ops))
		return nil
	}
	before, err := srv.Stats()
	if err != nil {
		return res, err
	}
	start := time.Now()
	for r := range rounds {
		fmt.Fprintf(logw, "metrics overhead %s: round %d/%d ...\n", label, r+1, rounds)
		order := []int{0, 1}
		if r%2 == 1 {
			order = []int{1, 0}
		}
		for _, which := range order {
			g, name := off, "metrics off"
			if which == 1 {
				g, name = on, "metrics on"
			}
			if err := run(&puts[which], name, func(i int) error {
				return g.do(ctx, http.MethodPut, "/bench/"+objKey(sc, i), payload, sc.Size, nil)
			}); err != nil {
				return res, fmt.Errorf("PUT %w", err)
			}
			if err := run(&gets[which], name, func(i int) error {
				return g.do(ctx, http.MethodGet, "/bench/"+objKey(sc, i), nil, 0, func(r io.Reader) error { return drain(r, sc.Size) })
			}); err != nil {
				return res, fmt.Errorf("GET %w", err)
			}
		}
	}
	// A short run still spans a few periods, so that the bus figure is a
	// steady state.
	if d := 3*time.Second - time.Since(start); d > 0 {
		time.Sleep(d)
	}
	after, err := srv.Stats()
	if err != nil {
		return res, err
	}
	res.Period, res.Metrics = time.Second, len(metrics.Builtin())
	periods := time.Since(start).Seconds() / res.Period.Seconds()
	res.BusBytesPerPeriod = float64(after.InBytes+after.OutBytes-before.InBytes-before.OutBytes) / periods
	res.BusMsgsPerPeriod = float64(after.InMsgs+after.OutMsgs-before.InMsgs-before.OutMsgs) / periods
	for _, op := range []struct {
		name string
		s    *[2]side
	}{{"PUT " + label, &puts}, {"GET " + label, &gets}} {
		offS, onS := op.s[0], op.s[1]
		res.Rows = append(res.Rows, Comparison{Op: op.name, Direct: combine(offS.res), Facet: combine(onS.res)})
		ratios := make([]float64, len(offS.res))
		for i := range ratios {
			ratios[i] = onS.res[i].OpsPerSec() / offS.res[i].OpsPerSec()
		}
		res.Summary = append(res.Summary, OverheadSummary{Op: op.name, ThroughputRatio: median(ratios),
			CPUOff: median(offS.cpu), CPUOn: median(onS.cpu)})
	}
	return res, nil
}

func median[T int64 | float64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// CollectorCost is the CPU time the built-in metrics take per request, out
// of any server: GETs, and 4 KiB PUTs with their payload sampled.
func CollectorCost(n int) (get, put time.Duration) {
	c := metrics.NewCollector(metrics.CollectorConfig{Node: "cost"})
	payload := textLike(4096)
	for i, op := range []string{"GetObject", "PutObject"} {
		var p []byte
		if op == "PutObject" {
			p = payload
		}
		c0 := processCPU()
		for range n {
			serveOne(c, op, "t1", p)
		}
		c1 := processCPU()
		d := (c1[0] + c1[1] - c0[0] - c0[1]) / time.Duration(n)
		if i == 0 {
			get = d
		} else {
			put = d
		}
	}
	return get, put
}

// WriteOverhead prints the robust comparison as a Markdown table.
func WriteOverhead(w io.Writer, ss []OverheadSummary) {
	fmt.Fprintln(w, "| op | throughput on/off (median of rounds) | CPU µs/op off | CPU µs/op on | CPU overhead |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	for _, s := range ss {
		fmt.Fprintf(w, "| %s | %.3f | %.1f | %.1f | %+.1f%% |\n", s.Op, s.ThroughputRatio,
			float64(s.CPUOff.Nanoseconds())/1e3, float64(s.CPUOn.Nanoseconds())/1e3, 100*(float64(s.CPUOn)/float64(s.CPUOff)-1))
	}
}

// combine adds rounds up: operations, bytes and time add; latencies are
// the rounds' medians.
func combine(rs []Result) Result {
	out := Result{Name: rs[0].Name}
	var p50, p99 []time.Duration
	for _, r := range rs {
		out.Ops += r.Ops
		out.Bytes += r.Bytes
		out.Elapsed += r.Elapsed
		p50, p99 = append(p50, r.P50), append(p99, r.P99)
	}
	slices.Sort(p50)
	slices.Sort(p99)
	out.P50, out.P99 = p50[len(p50)/2], p99[len(p99)/2]
	return out
}

// TrafficConfig is one monitoring set-up: W metrics measured by N nodes,
// each serving Targets tenants (one bucket each), with C controllers each
// watching one tenant's value of every metric.
type TrafficConfig struct {
	Metrics, Nodes, Controllers, Targets int
}

// Traffic is a set-up's monitoring traffic per period, measured at the
// broker, against Crystal's model O = W·s·(2N + C) (seeds/001).
type Traffic struct {
	TrafficConfig
	// NodeMsgBytes is the mean size of a node's sample message.
	NodeMsgBytes float64
	// InBytes and OutBytes are what the broker received and delivered per
	// period; ModelBytes is the model's figure with s = 130 bytes, and
	// ModelMeasuredS with s = NodeMsgBytes.
	InBytes, OutBytes, ModelBytes, ModelMeasuredS float64
	InMsgs, OutMsgs                               float64
}

// CrystalEventBytes is the size of a simple monitoring event in Crystal's
// measurements (seeds/001).
const CrystalEventBytes = 130

// DefaultTrafficConfigs span the model's figure: nodes, controllers and
// targets per node.
var DefaultTrafficConfigs = []TrafficConfig{
	{Metrics: 1, Nodes: 1, Controllers: 0, Targets: 1},
	{Metrics: 1, Nodes: 10, Controllers: 10, Targets: 1},
	{Metrics: 1, Nodes: 50, Controllers: 100, Targets: 1},
	{Metrics: 17, Nodes: 1, Controllers: 1, Targets: 1},
	{Metrics: 17, Nodes: 10, Controllers: 10, Targets: 1},
	{Metrics: 17, Nodes: 10, Controllers: 10, Targets: 10},
	{Metrics: 17, Nodes: 50, Controllers: 100, Targets: 1},
}

// RunBusTraffic measures the monitoring traffic of each set-up: N
// collectors and C watching controllers on their own connections to one
// broker, an aggregator (the workload-metric process), and requests on
// every node's targets each period. Periods are driven by the benchmark
// (each node flushes once per round), so the figures are per period
// whatever the wall time.
func RunBusTraffic(ctx context.Context, configs []TrafficConfig, periods int, logw io.Writer) ([]Traffic, error) {
	var out []Traffic
	for _, cfg := range configs {
		fmt.Fprintf(logw, "bus traffic W=%d N=%d C=%d targets=%d ...\n", cfg.Metrics, cfg.Nodes, cfg.Controllers, cfg.Targets)
		t, err := busTraffic(ctx, cfg, periods)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func busTraffic(ctx context.Context, cfg TrafficConfig, periods int) (Traffic, error) {
	res := Traffic{TrafficConfig: cfg}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv, err := bus.StartServer(bus.ServerOptions{Name: "traffic"})
	if err != nil {
		return res, err
	}
	defer srv.Close()
	mods := metrics.Builtin()
	if cfg.Metrics < len(mods) {
		mods = mods[:cfg.Metrics]
	}
	reg := metrics.NewRegistry(mods...)
	var conns []*bus.NATS
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	connect := func(name string) (*bus.NATS, error) {
		c, err := srv.Connect(name)
		if err == nil {
			conns = append(conns, c)
		}
		return c, err
	}
	ab, err := connect("aggregator")
	if err != nil {
		return res, err
	}
	agg := metrics.NewAggregator(metrics.AggregatorConfig{Registry: reg, Bus: ab})
	if err := agg.Start(ctx); err != nil {
		return res, err
	}
	nodes := make([]*metrics.Collector, cfg.Nodes)
	for i := range nodes {
		c, err := connect(fmt.Sprintf("node%d", i))
		if err != nil {
			return res, err
		}
		nodes[i] = metrics.NewCollector(metrics.CollectorConfig{Node: fmt.Sprintf("node%d", i), Registry: reg, Bus: c})
	}
	// Controllers watch one tenant each, for every metric: the observer
	// pattern's subscription, on the bus.
	var watches [][]byte
	var ctrls []*bus.NATS
	for i := range cfg.Controllers {
		c, err := connect(fmt.Sprintf("controller%d", i))
		if err != nil {
			return res, err
		}
		ctrls = append(ctrls, c)
		target := metrics.TenantTarget(fmt.Sprintf("t%d", i%max(cfg.Targets, 1)))
		for _, m := range mods {
			subj := metrics.SubjectAggPrefix + m.Info().Name + ".tenant." + bus.EscapeToken(target.Tenant)
			if _, err := c.Subscribe(subj, func(string, []byte) {}); err != nil {
				return res, err
			}
			w, _ := json.Marshal(metrics.Watch{V: 1, Metric: m.Info().Name, Target: target.String(), TTLMs: 3_600_000})
			watches = append(watches, w)
		}
	}
	for i, w := range watches {
		if err := ctrls[i/len(mods)].Publish(metrics.WatchSubject(metrics.TenantTarget("")), w); err != nil {
			return res, err
		}
	}
	for _, c := range conns {
		if err := c.Flush(10 * time.Second); err != nil {
			return res, err
		}
	}
	payload := textLike(4096)
	base := time.Now().Truncate(time.Second).Add(time.Hour) // never due: merged on completeness
	var st0 bus.ServerStats
	var nodeBytes, nodeMsgs uint64
	const warm = 2
	for p := range periods + warm {
		if p == warm {
			waitQuiet(agg)
			if st0, err = srv.Stats(); err != nil {
				return res, err
			}
			for _, n := range nodes {
				s := n.Stats()
				nodeBytes -= s.Bytes
				nodeMsgs -= s.Messages
			}
		}
		for _, n := range nodes {
			for t := range cfg.Targets {
				serveOne(n, "PutObject", fmt.Sprintf("t%d", t), payload)
				serveOne(n, "GetObject", fmt.Sprintf("t%d", t), nil)
			}
			n.Flush(base.Add(time.Duration(p+1) * time.Second))
		}
	}
	waitQuiet(agg)
	st1, err := srv.Stats()
	if err != nil {
		return res, err
	}
	for _, n := range nodes {
		s := n.Stats()
		nodeBytes += s.Bytes
		nodeMsgs += s.Messages
	}
	np := float64(periods)
	res.NodeMsgBytes = float64(nodeBytes) / float64(nodeMsgs)
	res.InBytes, res.OutBytes = float64(st1.InBytes-st0.InBytes)/np, float64(st1.OutBytes-st0.OutBytes)/np
	res.InMsgs, res.OutMsgs = float64(st1.InMsgs-st0.InMsgs)/np, float64(st1.OutMsgs-st0.OutMsgs)/np
	w, n, c := float64(cfg.Metrics), float64(cfg.Nodes), float64(cfg.Controllers)
	res.ModelBytes = w * CrystalEventBytes * (2*n + c)
	res.ModelMeasuredS = w * res.NodeMsgBytes * (2*n + c)
	return res, nil
}

// serveOne runs one request through a collector, as the S3 front end does.
func serveOne(c *metrics.Collector, op, tenant string, payload []byte) {
	o := &s3api.Observation{Op: op, Tenant: tenant, Bucket: "b", Key: "k", Start: time.Now(), Status: 200, Routed: true}
	c.Started(o)
	if payload != nil {
		n, _ := io.Copy(io.Discard, c.Body(o, bytes.NewReader(payload)))
		o.BytesIn = n
	} else {
		o.BytesOut = 4096
	}
	o.Duration = time.Since(o.Start)
	c.Done(o)
}

// waitQuiet waits until the aggregator has merged and published what it
// was sent: its counters stop moving.
func waitQuiet(a *metrics.Aggregator) {
	last := a.Stats()
	for {
		time.Sleep(50 * time.Millisecond)
		cur := a.Stats()
		if cur == last {
			return
		}
		last = cur
	}
}

// WriteTraffic prints traffic figures as a Markdown table.
func WriteTraffic(w io.Writer, ts []Traffic) {
	fmt.Fprintln(w, "| W metrics | N nodes | C controllers | targets/node | node msg B | broker in B/period | broker out B/period | in+out B/period | model W·130·(2N+C) | model with measured s | in+out / model |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, t := range ts {
		fmt.Fprintf(w, "| %d | %d | %d | %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.2f |\n", t.Metrics, t.Nodes, t.Controllers, t.Targets,
			t.NodeMsgBytes, t.InBytes, t.OutBytes, t.InBytes+t.OutBytes, t.ModelBytes, t.ModelMeasuredS, (t.InBytes+t.OutBytes)/t.ModelBytes)
	}
}
