package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/bench"
)

// onOffRunner runs one on/off comparison (bench.RunOnOff or a wrapper of
// it) in dir.
type onOffRunner func(ctx context.Context, dir string, sc bench.SpineScenario, rounds int, logw io.Writer) ([]bench.Comparison, []bench.OverheadSummary, error)

// newOnOffBenchCommand is a `facet bench NAME` that compares two facet
// serve processes, with a feature and without, by rounds of 4 KiB PUTs
// and GETs; what says what the facet row runs with, for the report.
func newOnOffBenchCommand(name, short, long, what string, run onOffRunner) *cobra.Command {
	var rounds, ops, conc int
	cmd := &cobra.Command{
		Use: name, Short: short, Long: long,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if rounds < 1 || ops < 10 || conc < 1 {
				return fmt.Errorf("--rounds %d, --ops %d, --concurrency %d: want at least 1, 10 and 1", rounds, ops, conc)
			}
			d, err := os.MkdirTemp("", "facet-bench-"+name+"-*")
			if err != nil {
				return err
			}
			defer os.RemoveAll(d)
			sc := bench.SpineScenario{Size: 4 << 10, Ops: ops, Concurrency: conc}
			start := time.Now()
			rows, summary, err := run(cmd.Context(), d, sc, rounds, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "\nfacet bench %s (%s, %s): facet serve %s (facet row) and without, %d rounds\n\n",
				name, time.Now().UTC().Format(time.RFC3339), time.Since(start).Round(time.Second), what, rounds)
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
