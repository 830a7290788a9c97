package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/bench"
)

func newBenchMetricsCommand() *cobra.Command {
	var quick bool
	cmd := &cobra.Command{
		Use:   "metrics",
		Short: "Workload metrics: what measuring requests costs small (4 KiB) PUTs and GETs (on vs off), and how many bytes the metrics send over the bus per period, against what the design predicts",
		Long: `Workload metrics (what dynamic policies and QoS controllers read): what measuring every request
costs 4 KiB PUTs and GETs through facet serve (metrics on vs --no-workload-metrics), and the bus
traffic per period with several nodes and controllers, against the expected size (one sample per
metric per node per period, fanned out to the aggregator and the controllers).

The model and recorded results: docs/benchmarks/metrics.md and docs/bus.md.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := os.MkdirTemp("", "facet-bench-*")
			if err != nil {
				return err
			}
			defer os.RemoveAll(d)
			scenarios := []bench.SpineScenario{{Size: 4 << 10, Ops: 1000, Concurrency: 1}, {Size: 4 << 10, Ops: 2000, Concurrency: 8}}
			rounds, periods, configs := 8, 10, bench.DefaultTrafficConfigs
			if quick {
				scenarios, rounds, periods = []bench.SpineScenario{{Size: 4 << 10, Ops: 200, Concurrency: 2}}, 2, 3
				configs = configs[:2]
			}
			out := cmd.OutOrStdout()
			var rows []bench.Comparison
			var summary []bench.OverheadSummary
			var busLines []string
			for _, sc := range scenarios {
				res, err := bench.RunMetricsOverhead(cmd.Context(), d, sc, rounds, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				rows = append(rows, res.Rows...)
				summary = append(summary, res.Summary...)
				busLines = append(busLines, fmt.Sprintf("- %s c=%d: %.0f bytes and %.1f messages per %s period on the bus (W=%d metrics, N=1 node, its own aggregator)",
					"4 KiB", sc.Concurrency, res.BusBytesPerPeriod, res.BusMsgsPerPeriod, res.Period, res.Metrics))
			}
			costGet, costPut := bench.CollectorCost(200_000)
			traffic, err := bench.RunBusTraffic(cmd.Context(), configs, periods, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "\nfacet bench metrics (%s): facet serve with workload metrics on (facet row) and off, %d rounds\n\n", time.Now().UTC().Format(time.RFC3339), rounds)
			bench.WriteTable(out, rows)
			fmt.Fprintln(out, "\nThe same runs as on/off ratios: the geometric mean over rounds (each a fresh pair of server processes taking turns; CPU is the server's own):")
			fmt.Fprintln(out)
			bench.WriteOverhead(out, summary)
			fmt.Fprintf(out, "\nThe collector alone, out of any server: %.2f µs per GET, %.2f µs per 4 KiB PUT (payload sampled for compressibility).\n",
				float64(costGet.Nanoseconds())/1e3, float64(costPut.Nanoseconds())/1e3)
			fmt.Fprintln(out, "\nMonitoring traffic of the metrics-on gateway under that load (broker in+out):")
			for _, l := range busLines {
				fmt.Fprintln(out, l)
			}
			fmt.Fprintf(out, "\nMonitoring traffic per period at the broker, %d periods, vs Crystal's model (s = %d bytes):\n\n", periods, bench.CrystalEventBytes)
			bench.WriteTraffic(out, traffic)
			return nil
		},
	}
	cmd.Flags().BoolVar(&quick, "quick", false, "small run, for smoke tests")
	return cmd
}
