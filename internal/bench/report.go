package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"syscall"
	"text/tabwriter"
	"time"
)

// ReportVersion is bumped when the JSON report changes incompatibly.
const ReportVersion = 1

// Report is a run's full result, as written to JSON.
type Report struct {
	Version   int       `json:"version"`
	Name      string    `json:"name"`
	Started   time.Time `json:"started"`
	ElapsedS  float64   `json:"elapsed_s"`
	IntervalS float64   `json:"interval_s"`
	// Scenario is what ran, credentials removed.
	Scenario *Scenario      `json:"scenario"`
	Client   ClientStats    `json:"client"`
	Tenants  []TenantReport `json:"tenants"`
}

// ClientStats is the benchmark client's own cost, so a reader can tell
// whether the client, not the server, was the limit.
type ClientStats struct {
	CPUUserS float64 `json:"cpu_user_s"`
	CPUSysS  float64 `json:"cpu_sys_s"`
	// CPUCores is CPU time over wall time: 1.0 is one core busy.
	CPUCores float64 `json:"cpu_cores"`
	// MachineCores is runtime.NumCPU(); CPUCores/MachineCores is the
	// share of the machine the client used.
	MachineCores int `json:"machine_cores"`
	// CPUPerOpUs is client CPU per completed operation.
	CPUPerOpUs float64 `json:"cpu_per_op_us"`
	// ClockNowNs is the cost of reading the clock (two reads per op).
	ClockNowNs float64 `json:"clock_now_ns"`
	// SleepOvershootUs is how late a 1 ms timer fires on average: the
	// resolution of open-loop schedules and trace replays.
	SleepOvershootUs float64 `json:"sleep_overshoot_us"`
	// GeneratedBytes is the PUT content the client generated.
	GeneratedBytes int64   `json:"generated_bytes"`
	ReplayLateOps  int64   `json:"replay_late_ops,omitempty"`
	ReplayMaxLagMs float64 `json:"replay_max_lag_ms,omitempty"`
}

// TenantReport is one tenant's results, per operation.
type TenantReport struct {
	Name     string     `json:"name"`
	Endpoint string     `json:"endpoint"`
	Bucket   string     `json:"bucket,omitempty"`
	Total    Stats      `json:"total"`
	Ops      []OpReport `json:"ops"`
	// Seconds is the tenant's throughput over time, all ops together.
	Seconds []Stats `json:"seconds"`
	// FirstError is the first failure's message, to explain Errors.
	FirstError string `json:"first_error,omitempty"`
}

// OpReport is one operation's results: over the run and per interval.
type OpReport struct {
	Op      string  `json:"op"`
	Total   Stats   `json:"total"`
	Seconds []Stats `json:"seconds"`
}

// Stats summarise the operations completed in a window. Latency is from
// the request's start to the end of its response body.
type Stats struct {
	// T is the window's start, in seconds since the measured start.
	T         float64 `json:"t"`
	Ops       int64   `json:"ops"`
	Bytes     int64   `json:"bytes"`
	Errors    int64   `json:"errors"`
	Misses    int64   `json:"misses,omitempty"`
	Dropped   int64   `json:"dropped,omitempty"`
	OpsPerSec float64 `json:"ops_per_s"`
	MBPerSec  float64 `json:"mb_per_s"`
	P50Ms     float64 `json:"p50_ms"`
	P90Ms     float64 `json:"p90_ms"`
	P99Ms     float64 `json:"p99_ms"`
	MaxMs     float64 `json:"max_ms"`
	MeanMs    float64 `json:"mean_ms"`
}

// percentile is the nearest-rank percentile of sorted latencies: the
// smallest value with at least p of the samples at or below it.
func percentile(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// windowStats computes Stats over samples in a window of length window.
// Latency percentiles count successful operations only: a refused request
// says nothing about how fast the server serves.
func windowStats(t float64, samples []sample, window time.Duration) Stats {
	st := Stats{T: t}
	lat := make([]int64, 0, len(samples))
	var sum int64
	for _, s := range samples {
		switch s.out {
		case outDropped:
			st.Dropped++
			continue
		case outError:
			st.Errors++
			continue
		case outMiss:
			st.Misses++
			continue
		}
		st.Ops++
		st.Bytes += s.bytes
		lat = append(lat, s.lat)
		sum += s.lat
	}
	secs := window.Seconds()
	if secs > 0 {
		st.OpsPerSec = float64(st.Ops) / secs
		st.MBPerSec = float64(st.Bytes) / 1e6 / secs
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		ms := func(ns int64) float64 { return float64(ns) / 1e6 }
		st.P50Ms = ms(percentile(lat, 0.50))
		st.P90Ms = ms(percentile(lat, 0.90))
		st.P99Ms = ms(percentile(lat, 0.99))
		st.MaxMs = ms(lat[len(lat)-1])
		st.MeanMs = ms(sum) / float64(len(lat))
	}
	return st
}

// perInterval splits samples into windows by completion time and
// summarises each; every window up to the run's end is present, empty or
// not, so timelines have no gaps.
func perInterval(samples []sample, interval, elapsed time.Duration) []Stats {
	n := int(math.Ceil(float64(elapsed) / float64(interval)))
	buckets := make([][]sample, max(n, 1))
	for _, s := range samples {
		i := min(int(s.end/int64(interval)), len(buckets)-1)
		buckets[i] = append(buckets[i], s)
	}
	out := make([]Stats, len(buckets))
	for i, b := range buckets {
		w := interval
		// The last window may be partial.
		if rest := elapsed - time.Duration(i)*interval; rest < w && rest > 0 {
			w = rest
		}
		out[i] = windowStats((time.Duration(i) * interval).Seconds(), b, w)
	}
	return out
}

func buildReport(sc *Scenario, runs []*tenantRun, start time.Time, elapsed, interval time.Duration) *Report {
	rep := &Report{
		Version:   ReportVersion,
		Name:      sc.Name,
		Started:   start.UTC(),
		ElapsedS:  elapsed.Seconds(),
		IntervalS: interval.Seconds(),
		Scenario:  sc.Redacted(),
	}
	for _, tr := range runs {
		var all []sample
		tenant := TenantReport{Name: tr.t.Name, Endpoint: tr.t.Endpoint, Bucket: tr.t.Bucket}
		for _, r := range tr.recs {
			all = append(all, r.samples...)
			if tenant.FirstError == "" {
				tenant.FirstError = r.firstErr
			}
		}
		byOp := map[Op][]sample{}
		for _, s := range all {
			if s.out == outDropped {
				// Drops belong to the tenant, not to an operation.
				continue
			}
			byOp[s.op] = append(byOp[s.op], s)
		}
		ops := make([]Op, 0, len(byOp))
		for o := range byOp {
			ops = append(ops, o)
		}
		sort.Slice(ops, func(i, j int) bool { return ops[i] < ops[j] })
		for _, o := range ops {
			tenant.Ops = append(tenant.Ops, OpReport{
				Op:      o.String(),
				Total:   windowStats(0, byOp[o], elapsed),
				Seconds: perInterval(byOp[o], interval, elapsed),
			})
		}
		tenant.Total = windowStats(0, all, elapsed)
		tenant.Seconds = perInterval(all, interval, elapsed)
		rep.Tenants = append(rep.Tenants, tenant)
	}
	return rep
}

func processCPU() [2]time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return [2]time.Duration{}
	}
	return [2]time.Duration{time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())}
}

func clientStats(cpu0, cpu1 [2]time.Duration, elapsed time.Duration, clock clockStats, rep *Report) ClientStats {
	user, sys := (cpu1[0] - cpu0[0]).Seconds(), (cpu1[1] - cpu0[1]).Seconds()
	cs := ClientStats{
		CPUUserS:         user,
		CPUSysS:          sys,
		MachineCores:     numCPU(),
		ClockNowNs:       clock.nowNs,
		SleepOvershootUs: clock.sleepOvershootUs,
	}
	if elapsed > 0 {
		cs.CPUCores = (user + sys) / elapsed.Seconds()
	}
	var ops int64
	for _, t := range rep.Tenants {
		ops += t.Total.Ops + t.Total.Errors + t.Total.Misses
	}
	if ops > 0 {
		cs.CPUPerOpUs = (user + sys) * 1e6 / float64(ops)
	}
	return cs
}

// WriteJSON writes the report, indented.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// LoadReport reads a report written by WriteJSON.
func LoadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Version != ReportVersion {
		return nil, fmt.Errorf("%s: report version %d, this facet reads %d", path, r.Version, ReportVersion)
	}
	return &r, nil
}

// WriteSummary prints the short text summary: one line per tenant and
// operation, then the client's own cost.
func (r *Report) WriteSummary(w io.Writer) {
	fmt.Fprintf(w, "%s: %.1fs, %d tenant(s)\n", r.Name, r.ElapsedS, len(r.Tenants))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tenant\top\tops\tops/s\tMB/s\terrors\tp50 ms\tp90 ms\tp99 ms\tmax ms\t")
	for _, t := range r.Tenants {
		for _, o := range t.Ops {
			s := o.Total
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.2f\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t\n",
				t.Name, o.Op, s.Ops, s.OpsPerSec, s.MBPerSec, s.Errors+s.Misses, s.P50Ms, s.P90Ms, s.P99Ms, s.MaxMs)
		}
		if t.Total.Dropped > 0 {
			fmt.Fprintf(tw, "%s\t(dropped)\t%d\t\t\t\t\t\t\t\t\n", t.Name, t.Total.Dropped)
		}
	}
	tw.Flush()
	for _, t := range r.Tenants {
		if t.FirstError != "" {
			fmt.Fprintf(w, "%s: first error: %s\n", t.Name, t.FirstError)
		}
	}
	c := r.Client
	fmt.Fprintf(w, "client: %.2f of %d cores (user %.1fs, sys %.1fs), %.0f µs CPU/op, clock read %.0f ns, 1 ms timer +%.0f µs, generated %.1f MB\n",
		c.CPUCores, c.MachineCores, c.CPUUserS, c.CPUSysS, c.CPUPerOpUs, c.ClockNowNs, c.SleepOvershootUs, float64(c.GeneratedBytes)/1e6)
	if c.MachineCores > 0 && c.CPUCores > 0.5*float64(c.MachineCores) {
		fmt.Fprintf(w, "warning: the client used more than half the machine's CPU; with the server on the same machine, it may be part of the limit\n")
	}
	if c.ReplayLateOps > 0 {
		fmt.Fprintf(w, "replay: %d ops started more than 100 ms late (max lag %.0f ms): raise trace concurrency or lower speed\n", c.ReplayLateOps, c.ReplayMaxLagMs)
	}
}
