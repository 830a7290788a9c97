package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/bench"
)

func newBenchVersioningCommand() *cobra.Command {
	var puts, keys int
	cmd := &cobra.Command{
		Use:   "versioning",
		Short: "a versioned bucket against a never-versioned one in one run: PUT 4 KiB and 1 MiB throughput, GET of the latest version, ListObjectVersions of N versions vs ListObjects of N keys",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if puts < 80 || keys < 1000 {
				return fmt.Errorf("--puts %d --keys %d: want at least 80 and 1000", puts, keys)
			}
			d, err := os.MkdirTemp(".", "facet-bench-versioning-*")
			if err != nil {
				return err
			}
			defer os.RemoveAll(d)
			start := time.Now()
			rep, err := bench.RunVersioning(cmd.Context(), d, puts, keys)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "\nfacet bench versioning (%s, %s; filesystem store in process, no fsync)\n\n", time.Now().UTC().Format(time.RFC3339), time.Since(start).Round(time.Second))
			bench.WriteVersioning(out, rep)
			return nil
		},
	}
	cmd.Flags().IntVar(&puts, "puts", 4000, "4 KiB PUTs per bucket (1 MiB PUTs: a twentieth), and GETs of the latest version")
	cmd.Flags().IntVar(&keys, "keys", 10000, "entries listed in each bucket (100000 for the issue's figure)")
	return cmd
}
