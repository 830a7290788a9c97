package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/facet-sds/facet/internal/bus"
	"github.com/facet-sds/facet/internal/metrics"
	"github.com/facet-sds/facet/internal/obs"
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
// throughput ratio, and of the server's CPU time per operation.
type OverheadSummary struct {
	Op string
	// ThroughputRatio is on/off ops/s, and CPURatio on/off server CPU per
	// op, each the geometric mean of the rounds' ratios (rounds alternate
	// which server starts first, and the mean cancels that order's bias).
	ThroughputRatio, CPURatio float64
	// CPUOff and CPUOn are the server's median CPU time per operation.
	CPUOff, CPUOn time.Duration
}

// RunMetricsOverhead measures 4 KiB PUT and GET through `facet serve` with
// workload metrics off and on. Each round starts a fresh pair of server
// processes (this executable), each one's CPU time its own. Within a
// round the two servers take turns by batches: the machine's load sways
// CPU time per operation by tens of percent, far more than what is
// measured, and turns make it weigh on both alike. The
// metrics-on server joins a bus the benchmark runs, whose counters give
// the monitoring traffic.
func RunMetricsOverhead(ctx context.Context, dir string, sc SpineScenario, rounds int, logw io.Writer) (MetricsOverheadResult, error) {
	var res MetricsOverheadResult
	srv, err := bus.StartServer(bus.ServerOptions{Name: "bench", Addr: "127.0.0.1:0"})
	if err != nil {
		return res, err
	}
	defer srv.Close()
	meter := &busMeter{srv: srv}
	sides := OnOff{Names: [2]string{"metrics off", "metrics on"}, Args: func(string) [2][]string {
		return [2][]string{{"--no-workload-metrics"}, {"--bus", srv.URL()}}
	}, meter: meter}
	if res.Rows, res.Summary, err = RunOnOff(ctx, dir, sc, rounds, sides, logw); err != nil {
		return res, err
	}
	res.Period, res.Metrics = time.Second, len(metrics.Builtin())
	periods := meter.time.Seconds() / res.Period.Seconds()
	res.BusBytesPerPeriod, res.BusMsgsPerPeriod = float64(meter.bytes)/periods, float64(meter.msgs)/periods
	return res, nil
}

// OnOff is a feature measured on and off: two `facet serve` processes
// started with Args (given each round's directory), the first without
// the feature, the second with it.
type OnOff struct {
	Names [2]string
	Args  func(dir string) [2][]string
	meter *busMeter // the bus's traffic, for workload metrics; nil: none
	// setup prepares each side's server once its bucket exists (which: 0
	// off, 1 on); nil: nothing to prepare.
	setup func(ctx context.Context, which int, g *gateway) error
}

// RunOnOff measures sc's PUTs and GETs through the two servers of sides,
// rounds times on fresh pairs, and returns the combined results (the
// facet column is the feature on) and the on/off ratios.
func RunOnOff(ctx context.Context, dir string, sc SpineScenario, rounds int, sides OnOff, logw io.Writer) ([]Comparison, []OverheadSummary, error) {
	payload := textLike(int(sc.Size))
	label := fmt.Sprintf("%s c=%d", sizeLabel(sc.Size), sc.Concurrency)
	type side struct {
		res []Result
		cpu []time.Duration // the server's, per op
	}
	var puts, gets [2]side // off, on
	for r := range rounds {
		fmt.Fprintf(logw, "%s vs %s %s: round %d/%d ...\n", sides.Names[1], sides.Names[0], label, r+1, rounds)
		if err := overheadRound(ctx, dir, sc, payload, sides, r%2 == 1, func(which int, put, get Result, putCPU, getCPU time.Duration) {
			puts[which].res, puts[which].cpu = append(puts[which].res, put), append(puts[which].cpu, putCPU)
			gets[which].res, gets[which].cpu = append(gets[which].res, get), append(gets[which].cpu, getCPU)
		}); err != nil {
			return nil, nil, err
		}
	}
	var rows []Comparison
	var summary []OverheadSummary
	for _, op := range []struct {
		name string
		s    *[2]side
	}{{"PUT " + label, &puts}, {"GET " + label, &gets}} {
		offS, onS := op.s[0], op.s[1]
		rows = append(rows, Comparison{Op: op.name, Direct: combine(offS.res), Facet: combine(onS.res)})
		ratios := make([]float64, len(offS.res))
		cpu := make([]float64, len(offS.res))
		for i := range ratios {
			ratios[i] = onS.res[i].OpsPerSec() / offS.res[i].OpsPerSec()
			cpu[i] = float64(onS.cpu[i]) / float64(offS.cpu[i])
		}
		summary = append(summary, OverheadSummary{Op: op.name, ThroughputRatio: geomean(ratios), CPURatio: geomean(cpu),
			CPUOff: median(offS.cpu), CPUOn: median(onS.cpu)})
	}
	return rows, summary, nil
}

// overheadRound runs one round on a fresh pair of servers: a warm-up, then
// PUTs and GETs in batches the two servers take in turns, the feature-on
// one started first and first to go when onFirst. It reports each side's results (which: 0 off,
// 1 on) and the server's CPU per op.
func overheadRound(ctx context.Context, dir string, sc SpineScenario, payload []byte, sides OnOff, onFirst bool,
	report func(which int, put, get Result, putCPU, getCPU time.Duration)) error {
	dir, err := os.MkdirTemp(dir, "metrics-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var gws [2]*gateway
	var procs [2]*serveProcess
	// The server started second costs some more per PUT, whatever its
	// configuration (up to a quarter here): the order alternates too.
	args := sides.Args(dir)
	launch := []int{0, 1}
	if onFirst {
		launch = []int{1, 0}
	}
	for _, which := range launch {
		g, p, err := startServeProcess(ctx, filepath.Join(dir, fmt.Sprint(which)), args[which]...)
		if err != nil {
			return err
		}
		defer g.stop()
		if err := g.do(ctx, http.MethodPut, "/bench", nil, 0, nil); err != nil {
			return fmt.Errorf("create bucket: %w", err)
		}
		if sides.setup != nil {
			if err := sides.setup(ctx, which, g); err != nil {
				return err
			}
		}
		gws[which], procs[which] = g, p
	}
	put := func(g *gateway) func(int) error {
		return func(i int) error { return g.do(ctx, http.MethodPut, "/bench/"+objKey(sc, i), payload, sc.Size, nil) }
	}
	get := func(g *gateway) func(int) error {
		return func(i int) error {
			return g.do(ctx, http.MethodGet, "/bench/"+objKey(sc, i), nil, 0, func(r io.Reader) error { return drain(r, sc.Size) })
		}
	}
	warm := SpineScenario{Size: sc.Size, Ops: max(sc.Ops/10, 20), Concurrency: sc.Concurrency}
	for _, g := range gws {
		for _, op := range []func(int) error{put(g), get(g)} {
			if m := measure("warm-up", warm, op); m.err != nil {
				return m.err
			}
		}
	}
	// The servers take turns by batches, so that the machine's load, which
	// sways CPU time per operation by tens of percent, weighs on both alike.
	const batches = 10
	batch := SpineScenario{Size: sc.Size, Ops: max(sc.Ops/batches, 1), Concurrency: sc.Concurrency}
	if err := sides.meter.start(); err != nil {
		return err
	}
	var results [2][2][]Result // server, op (PUT, GET)
	var cpu [2][2]time.Duration
	for o, mk := range []func(*gateway) func(int) error{put, get} {
		for b := range batches {
			order := []int{0, 1}
			if (b%2 == 1) != onFirst {
				order = []int{1, 0}
			}
			for _, which := range order {
				name := sides.Names[which]
				op := mk(gws[which])
				base := b * batch.Ops
				c0 := procs[which].cpu()
				m := measure(name, batch, func(i int) error { return op(base + i) })
				cpu[which][o] += procs[which].cpu() - c0
				if m.err != nil {
					return fmt.Errorf("%s: %w", name, m.err)
				}
				results[which][o] = append(results[which][o], m.Result)
			}
		}
	}
	if err := sides.meter.stop(); err != nil {
		return err
	}
	for which := range 2 {
		pr, gr := combine(results[which][0]), combine(results[which][1])
		report(which, pr, gr, cpu[which][0]/time.Duration(pr.Ops), cpu[which][1]/time.Duration(gr.Ops))
	}
	return nil
}

// busMeter adds up a bus server's traffic over the measured spans.
type busMeter struct {
	srv         *bus.Server
	bytes, msgs int64
	time        time.Duration
	at          time.Time
	st          bus.ServerStats
}

func (m *busMeter) start() (err error) {
	if m == nil {
		return nil
	}
	m.at = time.Now()
	m.st, err = m.srv.Stats()
	return err
}

func (m *busMeter) stop() error {
	if m == nil {
		return nil
	}
	st, err := m.srv.Stats()
	if err != nil {
		return err
	}
	m.bytes += st.InBytes + st.OutBytes - m.st.InBytes - m.st.OutBytes
	m.msgs += st.InMsgs + st.OutMsgs - m.st.InMsgs - m.st.OutMsgs
	m.time += time.Since(m.at)
	return nil
}

// serveProcess is a `facet serve` running as a child process.
type serveProcess struct{ pid int }

// startServeProcess runs `facet serve` (this executable, or $FACET_BIN) on
// loopback ports with args added, and returns a client for a fresh tenant. The
// gateway's stop sends SIGTERM and waits.
func startServeProcess(ctx context.Context, dir string, args ...string) (*gateway, *serveProcess, error) {
	const token = "bench-token-0123456789abcdef0123456789"
	s3, admin, stop, proc, err := startFacetProcess(nil, append([]string{"serve", "--data", dir, "--s3-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0",
		"--admin-token", token, "--unsafe-no-fsync", "--log-level", "info"}, args...)...)
	if err != nil {
		return nil, nil, err
	}
	g, err := newGateway(ctx, s3, admin, token, stop)
	if err != nil {
		return nil, nil, err
	}
	return g, proc, nil
}

// startFacetProcess runs this executable (or $FACET_BIN) with args and env
// added to the environment, and waits for its "facet ready" log line with
// the bound addresses. stop sends SIGTERM and waits.
func startFacetProcess(env []string, args ...string) (s3, admin string, stop func(), proc *serveProcess, err error) {
	exe := os.Getenv("FACET_BIN") // tests run from a test binary
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return "", "", nil, nil, err
		}
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", "", nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", "", nil, nil, err
	}
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	lines := bufio.NewScanner(stderr)
	var ready struct{ Msg, S3, Admin string }
	var last []byte
	for ready.Msg != "facet ready" && lines.Scan() {
		last = append(last[:0], lines.Bytes()...)
		_ = json.Unmarshal(lines.Bytes(), &ready)
	}
	if ready.Msg != "facet ready" {
		stop()
		return "", "", nil, nil, fmt.Errorf("facet %s did not start: %s", args[0], last)
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }() // it logs on
	return ready.S3, ready.Admin, stop, &serveProcess{pid: cmd.Process.Pid}, nil
}

// cpu is the time the process's threads have run, from the kernel's
// per-thread scheduler statistics (nanoseconds; Linux). It is 0 where
// they are not available.
func (p *serveProcess) cpu() time.Duration {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", p.pid))
	var total time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that just ended
		}
		var ns int64
		if _, err := fmt.Sscan(string(data), &ns); err == nil {
			total += time.Duration(ns)
		}
	}
	return total
}

func geomean(xs []float64) float64 {
	var sum float64
	for _, x := range xs {
		sum += math.Log(x)
	}
	return math.Exp(sum / float64(len(xs)))
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
	fmt.Fprintln(w, "| op | throughput on/off | server CPU µs/op off | server CPU µs/op on | server CPU on/off - 1 |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	for _, s := range ss {
		fmt.Fprintf(w, "| %s | %.3f | %.1f | %.1f | %+.1f%% |\n", s.Op, s.ThroughputRatio,
			float64(s.CPUOff.Nanoseconds())/1e3, float64(s.CPUOn.Nanoseconds())/1e3, 100*(s.CPURatio-1))
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
	o := &obs.Observation{Op: op, Tenant: tenant, Bucket: "b", Key: "k", Start: time.Now(), Status: 200, Routed: true}
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
