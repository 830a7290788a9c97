package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/bench"
)

func newBenchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure Facet against what it replaces, in the same run",
	}
	var dir string
	var quick bool
	spine := &cobra.Command{
		Use:   "spine",
		Short: "PUT/GET through facet serve (HTTP, SigV4) vs the embedded store in-process",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				d, err := os.MkdirTemp("", "facet-bench-*")
				if err != nil {
					return err
				}
				defer os.RemoveAll(d)
				dir = d
			}
			scenarios := bench.DefaultSpineScenarios
			if quick {
				scenarios = []bench.SpineScenario{{Size: 4 << 10, Ops: 200, Concurrency: 1}, {Size: 8 << 20, Ops: 4, Concurrency: 2}}
			}
			start := time.Now()
			rows, err := bench.RunSpine(cmd.Context(), dir, scenarios, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "\nfacet bench spine (%s, %s)\n\n", time.Now().UTC().Format(time.RFC3339), time.Since(start).Round(time.Second))
			bench.WriteTable(out, rows)
			return nil
		},
	}
	spine.Flags().StringVar(&dir, "dir", "", "data directory (default: a temporary one, removed afterwards)")
	spine.Flags().BoolVar(&quick, "quick", false, "small run, for smoke tests")
	cmd.AddCommand(spine)
	return cmd
}
