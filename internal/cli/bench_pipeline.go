package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/bench"
)

func newBenchPipelineCommand() *cobra.Command {
	var quick bool
	cmd := &cobra.Command{
		Use:   "pipeline",
		Short: "PUT/GET through facet serve into a bucket with no filter vs one running noop (and zstd, encryption)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := os.MkdirTemp("", "facet-bench-*")
			if err != nil {
				return err
			}
			defer os.RemoveAll(d)
			scenarios := bench.PipelineScenarios
			if quick {
				scenarios = []bench.SpineScenario{{Size: 1 << 20, Ops: 20, Concurrency: 1}}
			}
			rows, err := bench.RunPipeline(cmd.Context(), d, scenarios, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "\nfacet bench pipeline (%s): one row per bucket; the facet row is the noop filter, compared with each other row\n\n", time.Now().UTC().Format(time.RFC3339))
			bench.WriteTable(out, rows)
			return nil
		},
	}
	cmd.Flags().BoolVar(&quick, "quick", false, "small run, for smoke tests")
	return cmd
}
