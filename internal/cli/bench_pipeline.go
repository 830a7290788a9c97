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
		Short: "What a filter costs: PUT/GET through facet serve into a bucket without filters vs with a no-op filter, compression or encryption",
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

func newBenchRangeCommand() *cobra.Command {
	var quick bool
	cmd := &cobra.Command{
		Use:   "range",
		Short: "Range GET of 1 MiB from a 1 GiB object stored compressed+encrypted vs stored plain, through facet serve",
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := os.MkdirTemp("", "facet-bench-*")
			if err != nil {
				return err
			}
			defer os.RemoveAll(d)
			size, gets := int64(1<<30), 50
			if quick {
				size, gets = 64<<20, 10
			}
			rows, err := bench.RunRangeGet(cmd.Context(), d, size, 1<<20, gets, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "\nfacet bench range (%s): the facet row reads from the zstd+encrypted object, the direct row from the plain one\n\n", time.Now().UTC().Format(time.RFC3339))
			bench.WriteTable(out, rows)
			return nil
		},
	}
	cmd.Flags().BoolVar(&quick, "quick", false, "64 MiB object, for smoke tests")
	return cmd
}
