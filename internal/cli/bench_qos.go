package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/bench"
)

func newBenchQoSCommand() *cobra.Command {
	var (
		quick    bool
		capacity float64
		svg      string
		alg      string
	)
	cmd := &cobra.Command{
		Use:   "qos",
		Short: "Bandwidth differentiation across two gateways (Table 9.4a style): per-tenant MB/s under SLO settings, accuracy, convergence, utilisation, Jain's index; shaping cost vs --qos-off",
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := os.MkdirTemp("", "facet-bench-qos-*")
			if err != nil {
				return err
			}
			defer os.RemoveAll(d)
			o := bench.QoSOptions{CapacityPerNode: capacity, Algorithm: alg, Log: cmd.ErrOrStderr()}
			if quick {
				o.Phase, o.Settle, o.OverheadRounds = 5*time.Second, 2*time.Second, 1
			}
			res, err := bench.RunQoS(cmd.Context(), d, bench.DefaultQoSPhases, o)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "\nfacet bench qos (%s): 2 gateways × %s, 3 tenants × 2 GET streams of 1 MiB per gateway, %s algorithm, 500 ms period\n\n",
				time.Now().UTC().Format(time.RFC3339), rateFlag{&capacity}, alg)
			bench.WriteQoS(out, res)
			if svg != "" {
				f, err := os.Create(svg)
				if err != nil {
					return err
				}
				if err := bench.WriteQoSSVG(f, res); err != nil {
					f.Close()
					return err
				}
				if err := f.Close(); err != nil {
					return err
				}
				fmt.Fprintf(out, "\ntimeline plot written to %s\n", svg)
			}
			return nil
		},
	}
	capacity = 25e6
	cmd.Flags().BoolVar(&quick, "quick", false, "short phases, for smoke tests")
	cmd.Flags().Var(rateFlag{&capacity}, "capacity", "configured capacity of each gateway")
	cmd.Flags().StringVar(&svg, "svg", "", "also write the timeline as an SVG plot to this file")
	cmd.Flags().StringVar(&alg, "algorithm", "crystal", "the bandwidth controller's algorithm: crystal, maxmin or psfa")
	return cmd
}
