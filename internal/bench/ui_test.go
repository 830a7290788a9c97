package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
)

var (
	uiRounds     = flag.Int("ui-rounds", 16, "BenchmarkUIOverhead: pairs of batches (no dashboard, dashboards)")
	uiPairRounds = flag.Int("ui-pair-rounds", 6, "BenchmarkUIOverhead: rounds of the interleaved comparison (even: each server takes the dashboards in turn)")
)

// BenchmarkUIOverhead is the dashboard's cost to the data path: 4 KiB GETs
// through a facet serve process ($FACET_BIN) with no dashboard open and
// with ten streaming the live plots (goal: throughput ≥ 0.98× of none).
// It measures once, whatever b.N: run it with -benchtime=1x.
//
//	FACET_BIN=bin/facet go test -run='^$' -bench=UIOverhead -benchtime=1x ./internal/bench/
func BenchmarkUIOverhead(b *testing.B) {
	if os.Getenv("FACET_BIN") == "" {
		b.Fatal("set FACET_BIN to a facet binary (make bench does)")
	}
	// About 2 s per batch here, so that each "on" batch spans a few
	// periods of the live feed; many short rounds, so that the median
	// shrugs off those the machine's load spoils.
	sc := SpineScenario{Size: 4 << 10, Ops: 16000 * *uiRounds, Concurrency: 8}
	res, err := RunUIOverhead(context.Background(), b.TempDir(), sc, 10, *uiRounds, os.Stderr)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Printf("\nDashboard overhead: %d dashboards streaming /ui/api/events (and reading /ui/api/policies every 3 s) vs none, %d rounds of %d GETs each side\n\n",
		res.Dashboards, *uiRounds, sc.Ops / *uiRounds)
	WriteTable(os.Stdout, res.Rows)
	fmt.Println()
	WriteUIOverhead(os.Stdout, res)
	fmt.Printf("\nThe dashboards received %d events (%d bytes) over %.1f s of streaming.\n", res.Events, res.EventBytes, res.Open.Seconds())
	b.ReportMetric(res.Summary[0].ThroughputRatio, "get-ratio-geomean")

	// The same question asked of two servers at the same moments.
	pair, err := RunUIInterleaved(context.Background(), b.TempDir(), SpineScenario{Size: 4 << 10, Ops: 40000, Concurrency: 8}, 10, *uiPairRounds, os.Stderr)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Printf("\nTwo identical servers at the same moments, each GET to them in turn (8 clients, 40,000 GETs a round), 10 dashboards on one of them, which one alternating:\n\n")
	WriteUIInterleaved(os.Stdout, pair)
	fmt.Printf("The dashboards received %d events (%d bytes).\n", pair.Events, pair.EventBytes)
	b.ReportMetric(pair.ThroughputRatio, "get-ratio-interleaved")
	b.ReportMetric(res.Summary[0].CPURatio, "cpu-ratio")
}
