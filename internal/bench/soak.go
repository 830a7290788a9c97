package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"
)

// The soak benchmark (issue 22): many keep-alive connections, each its own
// TCP connection, issuing a PUT/GET/LIST/DELETE mix against one `facet
// serve` for a long time. It counts every error (a GET's bytes are checked
// against what was PUT), samples the server's resident memory and open
// files, and runs the same mix at a few connections in the same run, so
// what the many connections cost is a ratio.

// SoakOptions configure RunSoak.
type SoakOptions struct {
	// Dir is the data directory of the server RunSoak starts; unused
	// with Endpoint.
	Dir string
	// Endpoint, AccessKey, SecretKey, Region: a running server to soak
	// instead of one RunSoak starts. ServerPID is its process, for
	// memory and file samples (0: not sampled).
	Endpoint, AccessKey, SecretKey, Region string
	ServerPID                              int
	Bucket                                 string
	// Connections run the soak; Baseline connections run the same mix
	// first, for BaselineDuration (0: no baseline phase).
	Connections, Baseline      int
	Duration, BaselineDuration time.Duration
	// Warmup runs before each phase's measured time: latencies are not
	// kept, and the soak's starting memory is sampled at its end.
	Warmup time.Duration
	Mix    Mix
	// Small and Medium are the PUT sizes; MediumShare is the fraction of
	// PUTs that are Medium.
	Small, Medium int64
	MediumShare   float64
	// Keys is each connection's own key space: no two connections touch
	// the same key, so every miss or wrong byte is a server error.
	Keys int
	// SampleEvery is the interval of memory and file samples.
	SampleEvery time.Duration
	// MaxRSSGrowth is the growth (percent, end over start) that fails
	// the soak.
	MaxRSSGrowth float64
	Seed         uint64
	Log          io.Writer
}

func (o *SoakOptions) defaults() {
	if o.Connections <= 0 {
		o.Connections = 1000
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Minute
	}
	if o.Baseline > 0 && o.BaselineDuration <= 0 {
		o.BaselineDuration = min(max(o.Duration/10, 10*time.Second), time.Minute)
	}
	if o.Warmup <= 0 {
		o.Warmup = min(max(o.Duration/20, 5*time.Second), 30*time.Second)
	}
	if len(o.Mix) == 0 {
		o.Mix = Mix{"put": 30, "get": 40, "list": 10, "delete": 20}
	}
	if o.Small <= 0 {
		o.Small = 4 << 10
	}
	if o.Medium <= 0 {
		o.Medium = 256 << 10
	}
	if o.Keys <= 0 {
		o.Keys = 16
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = 5 * time.Second
	}
	if o.MaxRSSGrowth <= 0 {
		o.MaxRSSGrowth = 10
	}
	if o.Bucket == "" {
		o.Bucket = "soak"
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// SoakPhase is one number of connections' results.
type SoakPhase struct {
	Connections int            `json:"connections"`
	Seconds     float64        `json:"seconds"`
	Ops         []SoakOpStats  `json:"ops"`
	Errors      int64          `json:"errors"`
	ErrorKinds  map[string]int `json:"error_kinds,omitempty"`
	// ErrorExamples is the first message of each kind.
	ErrorExamples map[string]string `json:"error_examples,omitempty"`
	// Server samples over the measured time (0 when not sampled).
	RSSStartMiB  float64 `json:"rss_start_mib"`
	RSSPeakMiB   float64 `json:"rss_peak_mib"`
	RSSEndMiB    float64 `json:"rss_end_mib"`
	RSSGrowthPct float64 `json:"rss_growth_pct"`
	FDsMin       int     `json:"fds_min"`
	FDsMax       int     `json:"fds_max"`
	// RSSSamplesMiB are the server's samples, SampleEvery apart.
	RSSSamplesMiB []float64 `json:"rss_samples_mib,omitempty"`
	// ServerCPUUs and ClientCPUUs are CPU time per completed operation
	// over the measured time (µs), telling whether the server's work per
	// request or the machine's other load moved between phases.
	ServerCPUUs float64 `json:"server_cpu_us_per_op"`
	ClientCPUUs float64 `json:"client_cpu_us_per_op"`
}

// SoakOpStats is one operation's figures in a phase.
type SoakOpStats struct {
	Op        string  `json:"op"`
	Ops       int64   `json:"ops"`
	OpsPerSec float64 `json:"ops_per_s"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	P999Ms    float64 `json:"p999_ms"`
}

// SoakResult is the whole run.
type SoakResult struct {
	Started  time.Time   `json:"started"`
	Phases   []SoakPhase `json:"phases"` // baseline first, when run
	Soak     *SoakPhase  `json:"-"`
	Baseline *SoakPhase  `json:"-"`
	// NoFile is the soft open-file limit of this process and of the
	// server (0: unknown).
	NoFile       uint64 `json:"nofile"`
	ServerNoFile uint64 `json:"server_nofile"`
	Load         string `json:"load"` // /proc/loadavg at the end
}

// Failed says why the soak failed its own check, or "" when it passed:
// any error, or memory growth of MaxRSSGrowth percent or more.
func (r SoakResult) Failed(maxGrowth float64) string {
	var why []string
	for _, p := range r.Phases {
		if p.Errors > 0 {
			why = append(why, fmt.Sprintf("%d errors at %d connections", p.Errors, p.Connections))
		}
	}
	if r.Soak != nil && r.Soak.RSSStartMiB > 0 && r.Soak.RSSGrowthPct >= maxGrowth {
		why = append(why, fmt.Sprintf("server RSS grew %.1f%% (limit %.0f%%)", r.Soak.RSSGrowthPct, maxGrowth))
	}
	return strings.Join(why, "; ")
}

// RunSoak starts a server (unless o.Endpoint is set), runs the baseline
// phase and then the soak.
func RunSoak(ctx context.Context, o SoakOptions) (SoakResult, error) {
	o.defaults()
	res := SoakResult{Started: time.Now().UTC()}
	var err error
	if res.NoFile, err = raiseNoFile(uint64(o.Connections) + 256); err != nil {
		return res, err
	}
	pid := o.ServerPID
	if o.Endpoint == "" {
		// One tenant holds every connection: its cap on requests in
		// flight (--tenant-max-connections, 256 by default) must not be
		// what the soak measures.
		g, proc, err := startServeProcess(ctx, o.Dir, "--tenant-max-connections", strconv.Itoa(o.Connections+64))
		if err != nil {
			return res, err
		}
		defer g.stop()
		o.Endpoint, o.AccessKey, o.SecretKey, pid = g.s3URL, g.accessKey, g.secret, proc.pid
	}
	if pid > 0 {
		res.ServerNoFile = processNoFile(pid)
		if res.ServerNoFile > 0 && res.ServerNoFile < uint64(o.Connections)+64 {
			return res, fmt.Errorf("soak: the server may open %d files, fewer than %d connections need; raise its limit (ulimit -n)", res.ServerNoFile, o.Connections)
		}
	}
	admin := newS3Client(o.Endpoint, o.Region, o.AccessKey, o.SecretKey, 1)
	defer admin.close()
	if err := admin.createBucket(ctx, o.Bucket); err != nil {
		return res, fmt.Errorf("soak: create bucket: %w", err)
	}
	payload := make([]byte, 2*max(o.Small, o.Medium))
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], o.Seed)
	_, _ = rand.NewChaCha8(seed).Read(payload)
	weights, err := o.Mix.weights()
	if err != nil {
		return res, err
	}
	if o.Baseline > 0 {
		p, err := soakPhase(ctx, o, "b", o.Baseline, o.BaselineDuration, pid, payload, weights)
		if err != nil {
			return res, err
		}
		res.Phases = append(res.Phases, p)
	}
	p, err := soakPhase(ctx, o, "s", o.Connections, o.Duration, pid, payload, weights)
	if err != nil {
		return res, err
	}
	res.Phases = append(res.Phases, p)
	res.Soak = &res.Phases[len(res.Phases)-1]
	if o.Baseline > 0 {
		res.Baseline = &res.Phases[0]
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		res.Load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return res, nil
}

// soakWorker is one connection's loop state.
type soakWorker struct {
	c       *s3Client
	rng     *rand.Rand
	prefix  string
	keys    []soakKey
	present []int // indexes of keys that exist
	lat     [numOps][]int64
	errs    map[string]int
	example map[string]string
	buf     []byte
}

type soakKey struct {
	off, size int64
	exists    bool
}

func soakPhase(ctx context.Context, o SoakOptions, tag string, conns int, d time.Duration, pid int, payload []byte, weights [numOps]float64) (SoakPhase, error) {
	p := SoakPhase{Connections: conns, ErrorKinds: map[string]int{}, ErrorExamples: map[string]string{}}
	fmt.Fprintf(o.Log, "soak: %d connections: %s warm-up, then %s measured\n", conns, o.Warmup, d)
	workers := make([]*soakWorker, conns)
	for i := range workers {
		c := newS3Client(o.Endpoint, o.Region, o.AccessKey, o.SecretKey, 1)
		// One connection per worker, kept alive: the server sees conns
		// TCP connections, not a pool's few.
		tr := c.http.Transport.(*http.Transport)
		tr.MaxConnsPerHost, tr.MaxIdleConnsPerHost, tr.MaxIdleConns = 1, 1, 1
		tr.WriteBufferSize, tr.ReadBufferSize = 16<<10, 16<<10
		tr.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		workers[i] = &soakWorker{
			c: c, rng: rand.New(rand.NewPCG(o.Seed, uint64(i)+1)), //nolint:gosec // benchmark choices
			prefix: fmt.Sprintf("%s%04d/", tag, i), keys: make([]soakKey, o.Keys),
			errs: map[string]int{}, example: map[string]string{}, buf: make([]byte, max(o.Small, o.Medium)+1),
		}
	}
	defer func() {
		for _, w := range workers {
			w.c.close()
		}
	}()

	var stopping sync.WaitGroup
	measured := make(chan struct{})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	for _, w := range workers {
		stopping.Add(1)
		go func() {
			defer stopping.Done()
			keep := false
			for runCtx.Err() == nil {
				if !keep {
					select {
					case <-measured:
						keep = true
					default:
					}
				}
				w.step(runCtx, o, payload, weights, keep)
			}
		}()
	}

	// Samples: the warm-up's end is the soak's starting point.
	var rss []float64
	fds := []int{}
	sample := func() {
		if pid <= 0 {
			return
		}
		if m := processRSSMiB(pid); m > 0 {
			rss = append(rss, m)
		}
		if n := processFDs(pid); n > 0 {
			fds = append(fds, n)
		}
	}
	select {
	case <-time.After(o.Warmup):
	case <-ctx.Done():
		return p, ctx.Err()
	}
	close(measured)
	start := time.Now()
	server := &serveProcess{pid: pid}
	var serverCPU0 time.Duration
	if pid > 0 {
		serverCPU0 = server.cpu()
	}
	clientCPU0 := processCPU()
	sample()
	tick := time.NewTicker(o.SampleEvery)
	end := time.After(d)
loop:
	for {
		select {
		case <-tick.C:
			sample()
			if len(rss) > 0 {
				fmt.Fprintf(o.Log, "soak: %d connections, %s: server RSS %.1f MiB, %d open files\n", conns, time.Since(start).Round(time.Second), rss[len(rss)-1], fds[len(fds)-1])
			}
		case <-end:
			break loop
		case <-ctx.Done():
			tick.Stop()
			return p, ctx.Err()
		}
	}
	tick.Stop()
	sample()
	p.Seconds = time.Since(start).Seconds()
	clientCPU1 := processCPU()
	var serverCPU time.Duration
	if pid > 0 {
		serverCPU = server.cpu() - serverCPU0
	}
	stop()
	stopping.Wait()

	var lat [numOps][]int64
	for _, w := range workers {
		for op := range numOps {
			lat[op] = append(lat[op], w.lat[op]...)
		}
		for k, n := range w.errs {
			p.ErrorKinds[k] += n
			p.Errors += int64(n)
			if _, ok := p.ErrorExamples[k]; !ok {
				p.ErrorExamples[k] = w.example[k]
			}
		}
	}
	for op := range numOps {
		if weights[op] == 0 && len(lat[op]) == 0 {
			continue
		}
		l := lat[op]
		slices.Sort(l)
		ms := func(ns int64) float64 { return float64(ns) / 1e6 }
		p.Ops = append(p.Ops, SoakOpStats{Op: op.String(), Ops: int64(len(l)), OpsPerSec: float64(len(l)) / p.Seconds,
			P50Ms: ms(percentile(l, 0.50)), P99Ms: ms(percentile(l, 0.99)), P999Ms: ms(percentile(l, 0.999))})
	}
	var done int64
	for op := range numOps {
		done += int64(len(lat[op]))
	}
	if done > 0 {
		p.ServerCPUUs = float64(serverCPU.Microseconds()) / float64(done)
		p.ClientCPUUs = float64((clientCPU1[0] + clientCPU1[1] - clientCPU0[0] - clientCPU0[1]).Microseconds()) / float64(done)
	}
	if len(rss) > 0 {
		// Start and end are the medians of the first and last tenth of
		// the samples (three at least): one sample lands anywhere in a
		// GC cycle, and under 1,000 connections they swing by ±10%.
		k := min(max(3, len(rss)/10), len(rss))
		p.RSSStartMiB, p.RSSEndMiB, p.RSSPeakMiB = median(rss[:k]), median(rss[len(rss)-k:]), slices.Max(rss)
		p.RSSGrowthPct = 100 * (p.RSSEndMiB - p.RSSStartMiB) / p.RSSStartMiB
		p.RSSSamplesMiB = rss
	}
	if len(fds) > 0 {
		p.FDsMin, p.FDsMax = slices.Min(fds), slices.Max(fds)
	}
	return p, nil
}

// step issues one operation of the mix. GET and DELETE need a key that
// exists; with none, the worker PUTs instead.
func (w *soakWorker) step(ctx context.Context, o SoakOptions, payload []byte, weights [numOps]float64, keep bool) {
	op, ok := pickOp(w.rng, weights, len(w.present) > 0)
	if !ok {
		op = OpPut // a mix of reads only starts with nothing to read
	}
	var err error
	t0 := time.Now()
	switch op {
	case OpPut:
		i := w.rng.IntN(len(w.keys))
		size := o.Small
		if w.rng.Float64() < o.MediumShare {
			size = o.Medium
		}
		off := w.rng.Int64N(int64(len(payload)) - size + 1)
		err = w.c.put(ctx, o.Bucket, w.key(i), bytes.NewReader(payload[off:off+size]), size, w.buf)
		if err == nil {
			if !w.keys[i].exists {
				w.present = append(w.present, i)
			}
			w.keys[i] = soakKey{off: off, size: size, exists: true}
		}
	case OpGet, OpHead:
		i := w.present[w.rng.IntN(len(w.present))]
		err = w.get(ctx, o.Bucket, i, payload)
	case OpDelete:
		j := w.rng.IntN(len(w.present))
		i := w.present[j]
		err = w.c.delete(ctx, o.Bucket, w.key(i), w.buf)
		if err == nil {
			w.keys[i].exists = false
			w.present[j] = w.present[len(w.present)-1]
			w.present = w.present[:len(w.present)-1]
		}
	case OpList:
		_, err = w.c.list(ctx, o.Bucket, w.prefix, 100, w.buf)
	}
	if ctx.Err() != nil {
		return // cut by the phase's end: neither a result nor an error
	}
	if err != nil {
		kind := op.String() + ": " + errorKind(err)
		w.errs[kind]++
		if _, ok := w.example[kind]; !ok {
			w.example[kind] = err.Error()
		}
		return
	}
	if keep {
		w.lat[op] = append(w.lat[op], int64(time.Since(t0)))
	}
}

func (w *soakWorker) key(i int) string { return w.prefix + strconv.Itoa(i) }

// get reads key i whole and checks it is the bytes last PUT.
func (w *soakWorker) get(ctx context.Context, bucket string, i int, payload []byte) error {
	k := w.keys[i]
	resp, err := w.c.send(ctx, http.MethodGet, objectPath(bucket, w.key(i)), "", nil, 0)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.ReadFull(resp.Body, w.buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return err
	}
	if int64(n) != k.size {
		return fmt.Errorf("%w: %d bytes, want %d", errWrongBytes, n, k.size)
	}
	if !bytes.Equal(w.buf[:n], payload[k.off:k.off+k.size]) {
		return fmt.Errorf("%w: content differs from what was PUT", errWrongBytes)
	}
	return nil
}

var errWrongBytes = errors.New("wrong bytes")

// errorKind groups errors for the report: the S3 status and code, or the
// kind of network failure.
func errorKind(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, errNotFound):
		return "404 (a key this connection wrote)"
	case errors.Is(err, errWrongBytes):
		return "wrong bytes"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return "too many open files"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed (EOF)"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	s := err.Error()
	// "PUT /bucket/key: 503 SlowDown": keep the status and code.
	if i := strings.LastIndex(s, ": "); i >= 0 && len(s)-i < 64 {
		return s[i+2:]
	}
	return "other"
}

// raiseNoFile raises this process's soft open-file limit to its hard one
// (Go does this at start, but restores the original for the server it
// execs; an explicit limit is inherited) and checks want fit.
func raiseNoFile(want uint64) (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, fmt.Errorf("soak: open-file limit: %w", err)
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			return 0, fmt.Errorf("soak: raise the open-file limit: %w", err)
		}
	}
	if l.Cur < want {
		return l.Cur, fmt.Errorf("soak: the open-file limit is %d, fewer than the %d the connections need; raise the hard limit (ulimit -Hn)", l.Cur, want)
	}
	return l.Cur, nil
}

// processNoFile is pid's soft open-file limit, from /proc (0: unknown).
func processNoFile(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(strings.TrimPrefix(line, "Max open files")); len(f) >= 2 && strings.HasPrefix(line, "Max open files") {
			n, _ := strconv.ParseUint(f[0], 10, 64)
			return n
		}
	}
	return 0
}

// processRSSMiB is pid's resident memory (VmRSS) in MiB (0: unknown).
func processRSSMiB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

// processFDs is how many files pid has open (0: unknown).
func processFDs(pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0
	}
	return len(ents)
}

// WriteSoak prints the result as Markdown tables: each phase's figures,
// the soak against the baseline, and the server's memory and files.
func WriteSoak(w io.Writer, r SoakResult) {
	fmt.Fprintln(w, "| connections | op | ops/s | p50 ms | p99 ms | p99.9 ms | errors |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|")
	for _, p := range r.Phases {
		var total float64
		for _, s := range p.Ops {
			total += s.OpsPerSec
			fmt.Fprintf(w, "| %d | %s | %.1f | %.2f | %.2f | %.2f | |\n", p.Connections, s.Op, s.OpsPerSec, s.P50Ms, s.P99Ms, s.P999Ms)
		}
		fmt.Fprintf(w, "| %d | all | %.1f | | | | %d |\n", p.Connections, total, p.Errors)
	}
	for _, p := range r.Phases {
		for k, n := range p.ErrorKinds {
			fmt.Fprintf(w, "\nerrors at %d connections: %d × %s (first: %s)", p.Connections, n, k, p.ErrorExamples[k])
		}
	}
	if r.Baseline != nil && r.Soak != nil {
		fmt.Fprintf(w, "\n\n%d connections vs %d, same mix:\n\n", r.Soak.Connections, r.Baseline.Connections)
		fmt.Fprintln(w, "| op | throughput ratio | p99 ratio |")
		fmt.Fprintln(w, "|---|---:|---:|")
		var st, bt float64
		for _, s := range r.Soak.Ops {
			st += s.OpsPerSec
			for _, b := range r.Baseline.Ops {
				if b.Op == s.Op && b.OpsPerSec > 0 && b.P99Ms > 0 {
					fmt.Fprintf(w, "| %s | %.2f | %.1f |\n", s.Op, s.OpsPerSec/b.OpsPerSec, s.P99Ms/b.P99Ms)
				}
			}
		}
		for _, b := range r.Baseline.Ops {
			bt += b.OpsPerSec
		}
		if bt > 0 {
			fmt.Fprintf(w, "| all | %.2f | |\n", st/bt)
		}
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if s := r.Soak; s != nil && s.RSSStartMiB > 0 {
		fmt.Fprintf(tw, "server RSS at %d connections (medians of the first and last tenth of %d samples after warm-up):\tstart %.1f MiB\tpeak %.1f MiB\tend %.1f MiB\tgrowth %+.1f%%\n",
			s.Connections, len(s.RSSSamplesMiB), s.RSSStartMiB, s.RSSPeakMiB, s.RSSEndMiB, s.RSSGrowthPct)
	}
	for _, p := range r.Phases {
		fmt.Fprintf(tw, "CPU per operation at %d connections:\tserver %.0f µs\tbenchmark client %.0f µs\n", p.Connections, p.ServerCPUUs, p.ClientCPUUs)
	}
	for _, p := range r.Phases {
		if p.FDsMax > 0 {
			fmt.Fprintf(tw, "server open files at %d connections:\tmin %d\tmax %d\n", p.Connections, p.FDsMin, p.FDsMax)
		}
	}
	fmt.Fprintf(tw, "open-file limits:\tbenchmark %d\tserver %d\n", r.NoFile, r.ServerNoFile)
	fmt.Fprintf(tw, "load average at the end:\t%s\n", r.Load)
	tw.Flush()
}
