// Package bench owns Facet's benchmarks: each one runs an operation
// through Facet and through the thing Facet replaces or fronts, in the same
// run, and reports both with their ratio.
package bench

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// Result summarises one measured series.
type Result struct {
	Name    string
	Ops     int
	Bytes   int64
	Elapsed time.Duration
	P50     time.Duration
	P99     time.Duration
}

// OpsPerSec is the completed operations per second.
func (r Result) OpsPerSec() float64 { return float64(r.Ops) / r.Elapsed.Seconds() }

// MBPerSec is the payload throughput in MB/s (10^6 bytes).
func (r Result) MBPerSec() float64 { return float64(r.Bytes) / 1e6 / r.Elapsed.Seconds() }

func summarise(name string, lat []time.Duration, bytesPerOp int64, elapsed time.Duration) Result {
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(float64(len(lat))*p))]
	}
	return Result{Name: name, Ops: len(lat), Bytes: bytesPerOp * int64(len(lat)), Elapsed: elapsed, P50: pct(0.50), P99: pct(0.99)}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond)) }

// Comparison is Facet's figure next to the baseline's.
type Comparison struct {
	Op            string
	Facet, Direct Result
	// Baselines are further reference series, each compared with Facet.
	Baselines []Result
}

// WriteTable prints comparisons as a Markdown table.
func WriteTable(w io.Writer, rows []Comparison) {
	fmt.Fprintln(w, "| op | path | ops/s | MB/s | p50 ms | p99 ms | facet throughput ratio vs this row | facet p50 overhead ms vs this row |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|")
	for _, c := range rows {
		for _, r := range append(append([]Result{c.Direct}, c.Baselines...), c.Facet) {
			ratio, over := "", ""
			if r.Name != c.Facet.Name {
				ratio = fmt.Sprintf("%.2f", c.Facet.OpsPerSec()/r.OpsPerSec())
				over = ms(c.Facet.P50 - r.P50)
			}
			fmt.Fprintf(w, "| %s | %s | %.1f | %.1f | %s | %s | %s | %s |\n", c.Op, r.Name, r.OpsPerSec(), r.MBPerSec(), ms(r.P50), ms(r.P99), ratio, over)
		}
	}
}
