package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/bench"
)

func newBenchRemoteCommand() *cobra.Command {
	var quick bool
	cmd := &cobra.Command{
		Use: "remote",
		Short: "Scale-out: GET/PUT 4 KiB and 64 MiB through facet gateway over versitygw vs straight to versitygw, " +
			"then two gateways vs one (needs bench/peers/versitygw.sh install and redis-server)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := os.MkdirTemp("", "facet-bench-remote-*")
			if err != nil {
				return err
			}
			defer os.RemoveAll(d)
			o := bench.RemoteOptions{Dir: d, Log: cmd.ErrOrStderr(),
				Scenarios: []bench.SpineScenario{
					{Size: 4 << 10, Ops: 2000, Concurrency: 1},
					{Size: 4 << 10, Ops: 4000, Concurrency: 8},
					{Size: 64 << 20, Ops: 8, Concurrency: 1},
					{Size: 64 << 20, Ops: 16, Concurrency: 4},
				},
				Scale: bench.SpineScenario{Size: 4 << 10, Ops: 6000, Concurrency: 16},
			}
			if quick {
				o.Scenarios = []bench.SpineScenario{{Size: 4 << 10, Ops: 200, Concurrency: 1}, {Size: 8 << 20, Ops: 4, Concurrency: 2}}
				o.Scale = bench.SpineScenario{Size: 4 << 10, Ops: 400, Concurrency: 8}
			}
			start := time.Now()
			res, err := bench.RunRemote(cmd.Context(), o)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "\nfacet bench remote (%s, %s): facet gateway (redis metadata, NATS bus, no policy) over versitygw vs the same requests straight to versitygw\n\n",
				time.Now().UTC().Format(time.RFC3339), time.Since(start).Round(time.Second))
			bench.WriteTable(out, res.Rows)
			fmt.Fprintf(out, "\nTwo gateways vs one (clients spread round-robin), all processes on this machine; CPU per operation by process:\n\n")
			bench.WriteScale(out, res.Scale)
			return nil
		},
	}
	cmd.Flags().BoolVar(&quick, "quick", false, "small run, for smoke tests")
	return cmd
}
