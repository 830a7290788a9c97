package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/bench"
)

func newBenchAuditCommand() *cobra.Command {
	var (
		rounds, ops, conc int
	)
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "The audit log's cost: 4 KiB PUTs (each one an audit line) and GETs (none, the control) through facet serve with --audit-log vs without, in one run",
		Long: `What the audit log costs requests: two facet serve processes, one with --audit-log (a file in the
run's directory) and one without, take turns by batches of 4 KiB PUTs, then GETs; each round starts
a fresh pair. Every PUT is a mutation and writes an audit line; GETs write none and show the noise.

The recorded results: docs/benchmarks/audit.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if rounds < 1 || ops < 10 || conc < 1 {
				return fmt.Errorf("--rounds %d, --ops %d, --concurrency %d: want at least 1, 10 and 1", rounds, ops, conc)
			}
			d, err := os.MkdirTemp("", "facet-bench-audit-*")
			if err != nil {
				return err
			}
			defer os.RemoveAll(d)
			sc := bench.SpineScenario{Size: 4 << 10, Ops: ops, Concurrency: conc}
			sides := bench.OnOff{Names: [2]string{"audit off", "audit on"}, Args: func(dir string) [2][]string {
				return [2][]string{nil, {"--audit-log", filepath.Join(dir, "audit.log")}}
			}}
			start := time.Now()
			rows, summary, err := bench.RunOnOff(cmd.Context(), d, sc, rounds, sides, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "\nfacet bench audit (%s, %s): facet serve with --audit-log (facet row) and without, %d rounds\n\n",
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
