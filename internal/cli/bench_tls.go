package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/bench"
)

func newBenchTLSCommand() *cobra.Command {
	var (
		quick  bool
		rounds int
	)
	cmd := &cobra.Command{
		Use:   "tls",
		Short: "TLS: 4 KiB and 64 MiB PUT/GET through facet serve over HTTPS vs plain HTTP, in one run (ratio)",
		Long: `What TLS on the S3 listener costs: the same PUTs and GETs through two facet serve stacks in
this process, one serving HTTPS (--tls-cert/--tls-key with a throwaway CA's ECDSA P-256 certificate,
TLS 1.3) and one plain HTTP, in rounds alternating which goes first. Keep-alive connections: the
handshake is paid once per connection, as by any S3 client.

Recorded results: docs/benchmarks/tls.md.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := os.MkdirTemp("", "facet-bench-tls-*")
			if err != nil {
				return err
			}
			defer os.RemoveAll(d)
			scenarios := bench.DefaultTLSScenarios
			if quick {
				scenarios = []bench.SpineScenario{{Size: 4 << 10, Ops: 100, Concurrency: 2}, {Size: 1 << 20, Ops: 4, Concurrency: 1}}
				rounds = 1
			}
			rows, err := bench.RunTLS(cmd.Context(), d, scenarios, rounds, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "\nfacet bench tls (%s): facet serve over HTTPS (facet row) vs plain HTTP (direct row), %d rounds\n\n", time.Now().UTC().Format(time.RFC3339), rounds)
			bench.WriteTable(out, rows)
			return nil
		},
	}
	cmd.Flags().BoolVar(&quick, "quick", false, "small run, for smoke tests")
	cmd.Flags().IntVar(&rounds, "rounds", 4, "rounds per scenario, alternating which stack goes first")
	return cmd
}
