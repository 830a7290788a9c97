package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/bench"
)

func newBenchIntegrityCommand() *cobra.Command {
	var n int
	cmd := &cobra.Command{
		Use:   "integrity",
		Short: "GETs of 4 KiB and 64 MiB objects with every block checked against its CRC32C vs served unchecked (sendfile), in one run; the scrubber's read vs a raw read",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if n < 10 {
				return fmt.Errorf("--requests %d: want at least 10", n)
			}
			d, err := os.MkdirTemp(".", "facet-bench-integrity-*")
			if err != nil {
				return err
			}
			defer os.RemoveAll(d)
			start := time.Now()
			rep, err := bench.RunIntegrity(cmd.Context(), d, n)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "\nfacet bench integrity (%s, %s; filesystem store, loopback HTTP)\n\n", time.Now().UTC().Format(time.RFC3339), time.Since(start).Round(time.Second))
			bench.WriteIntegrity(out, rep)
			return nil
		},
	}
	cmd.Flags().IntVar(&n, "requests", 2000, "GETs of the small object each way (the large one gets a hundredth, at least 5)")
	return cmd
}
