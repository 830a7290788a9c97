package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/bench"
)

func newBenchQuotaCommand() *cobra.Command {
	var (
		rounds, ops, conc int
	)
	cmd := &cobra.Command{
		Use:   "quota",
		Short: "A quota's cost: 4 KiB PUTs (each one charged against the tenant's limits) and GETs (the control) through facet serve with a quota set vs none, in one run",
		Long: `What a quota costs requests: two facet serve processes, one whose benchmark tenant has a quota
(bytes, objects, uploads; far above what the run stores) and one without, take turns by batches of
4 KiB PUTs, then GETs; each round starts a fresh pair. Both count usage (every write is charged to
the counters either way); the quota adds the limits the charges are checked against. GETs are not
charged and show the noise.

The recorded results: docs/benchmarks/quota.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if rounds < 1 || ops < 10 || conc < 1 {
				return fmt.Errorf("--rounds %d, --ops %d, --concurrency %d: want at least 1, 10 and 1", rounds, ops, conc)
			}
			d, err := os.MkdirTemp("", "facet-bench-quota-*")
			if err != nil {
				return err
			}
			defer os.RemoveAll(d)
			sc := bench.SpineScenario{Size: 4 << 10, Ops: ops, Concurrency: conc}
			start := time.Now()
			rows, summary, err := bench.QuotaOverhead(cmd.Context(), d, sc, rounds, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "\nfacet bench quota (%s, %s): facet serve with a quota on the tenant (facet row) and without, %d rounds\n\n",
				time.Now().UTC().Format(time.RFC3339), time.Since(start).Round(time.Second), rounds)
			bench.WriteTable(out, rows)
			fmt.Fprintln(out, "\nOn/off ratios, the geometric mean over rounds (each a fresh pair of server processes taking turns; CPU is the server's own):")
			fmt.Fprintln(out)
			bench.WriteOverhead(out, summary)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&rounds, "rounds", 4, "rounds, each on a fresh pair of servers")
	f.IntVar(&ops, "ops", 2000, "PUTs (and GETs) per server per round")
	f.IntVar(&conc, "concurrency", 8, "requests in flight")
	return cmd
}
