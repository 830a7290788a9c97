package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/bench"
)

func newBenchCacheCommand() *cobra.Command {
	var quick bool
	o := bench.DefaultCacheOptions()
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Object cache: how much faster repeated GETs from a slower store (versitygw) are with the caching filter, when a policy turns it on and off with the load, and what it adds to PUTs",
		Long: `Object cache: how much faster GETs through Facet in front of a slower object store (versitygw)
are with the caching filter than without, in three workloads:
  - a GET rate that rises and falls, under a policy that caches only while the rate is high
    (latency while caching vs not);
  - a replayed read-heavy web-site trace, with a cold and then a warm cache;
  - PUTs into a cached bucket vs an uncached one (what deciding to cache costs a write).

The experiments and the published figures they are compared with: docs/benchmarks/caching.md.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := os.MkdirTemp("", "facet-bench-*")
			if err != nil {
				return err
			}
			defer os.RemoveAll(d)
			o.Dir, o.Log = d, cmd.ErrOrStderr()
			if quick {
				o.Cycles, o.Phase, o.TraceLimit, o.PutOps, o.HitPathN = 1, 4*time.Second, 200, 20, 50
			}
			rep, err := bench.RunCache(cmd.Context(), o)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "\nfacet bench cache (%s)\n\n", time.Now().UTC().Format(time.RFC3339))
			bench.WriteCacheReport(out, rep)
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&quick, "quick", false, "small run, for smoke tests")
	f.StringVar(&o.Trace, "trace", o.Trace, "the read-heavy trace to replay (CSV; facet bench trace synth --kind arctur writes one)")
	f.IntVar(&o.Cycles, "cycles", o.Cycles, "low/high cycles of the oscillating workload")
	f.DurationVar(&o.Phase, "phase", o.Phase, "length of each low and high phase")
	f.Float64Var(&o.LowRate, "low", o.LowRate, "GETs/s of the low phases (below the policy's 5)")
	f.Float64Var(&o.HighRate, "high", o.HighRate, "GETs/s of the high phases")
	f.IntVar(&o.TraceLimit, "trace-gets", o.TraceLimit, "GETs of the trace replayed")
	f.IntVar(&o.PutOps, "puts", o.PutOps, "1 MiB PUTs per bucket for the admission overhead")
	return cmd
}
