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
		Short: "The caching filter over versitygw: Fig. 5 (dynamic caching, oscillating 1 MiB GETs), the Arctur-like trace with and without caching, PUT admission overhead",
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
	f.StringVar(&o.Trace, "trace", o.Trace, "the Arctur-like read trace")
	f.IntVar(&o.Cycles, "cycles", o.Cycles, "low/high cycles of the oscillating workload")
	f.DurationVar(&o.Phase, "phase", o.Phase, "length of each low and high phase")
	f.Float64Var(&o.LowRate, "low", o.LowRate, "GETs/s of the low phases (below the policy's 5)")
	f.Float64Var(&o.HighRate, "high", o.HighRate, "GETs/s of the high phases")
	f.IntVar(&o.TraceLimit, "trace-gets", o.TraceLimit, "GETs of the trace replayed")
	f.IntVar(&o.PutOps, "puts", o.PutOps, "1 MiB PUTs per bucket for the admission overhead")
	return cmd
}
