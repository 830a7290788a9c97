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
		quick     bool
		capacity  float64
		svg       string
		alg       string
		overhead  bool
		scenarios bool
		rounds    int
		window    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "qos",
		Short: "QoS: how closely two gateways give each tenant the bandwidth its SLO asks for (MB/s per tenant, error, time to settle, capacity used, fairness), and what shaping costs when nothing is limited",
		Long: `QoS across a fleet: two facet serve processes, three tenants GETting through both, SLOs that change
every few seconds. Printed per phase: each tenant's MB/s against the share the model gives it, the
error, how long the shares take to settle after a change, how much of the configured capacity is
used, and how evenly spare bandwidth is shared (Jain's fairness index, 1 = perfectly even). Then
what shaping costs a request when no tenant is limited (QoS on vs --qos-off). Then two scenarios
against the model: an asymmetric fleet (a reserving tenant that uses one gateway of two: each
tenant's fleet-wide MB/s and the least share of a node any tenant gets) and an idle reservation
(a reserved tenant alone on a server without --qos-capacity runs as fast as one without an SLO).

The setup, the model and the recorded results: docs/benchmarks/qos.md and docs/qos.md.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := os.MkdirTemp("", "facet-bench-qos-*")
			if err != nil {
				return err
			}
			defer os.RemoveAll(d)
			o := bench.QoSOptions{CapacityPerNode: capacity, Algorithm: alg, Log: cmd.ErrOrStderr(),
				Overhead: bench.QoSOverheadOptions{Rounds: rounds, Window: window, Log: cmd.ErrOrStderr()}}
			if quick {
				o.Phase, o.Settle = 5*time.Second, 2*time.Second
				o.Overhead.Rounds, o.Overhead.Window = 2, time.Second
			}
			if overhead {
				rs, err := bench.RunQoSOverhead(cmd.Context(), d, o.Overhead)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "\nfacet bench qos --overhead-only (%s): shaping cost, QoS on (no SLO) vs --qos-off, two servers loaded in turns, 3 tenants × %d GET streams\n\n",
					time.Now().UTC().Format(time.RFC3339), max(o.Overhead.Streams, 4))
				bench.WriteQoSOverhead(cmd.OutOrStdout(), rs)
				return nil
			}
			out := cmd.OutOrStdout()
			runScenarios := func() error {
				window := 8 * time.Second
				if quick {
					window = 4 * time.Second
				}
				sc, err := bench.RunQoSScenarios(cmd.Context(), d, o, window)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "\nfacet bench qos scenarios (%s), %s algorithm, 500 ms period\n\n", time.Now().UTC().Format(time.RFC3339), alg)
				bench.WriteQoSScenarios(out, sc)
				return nil
			}
			if scenarios {
				return runScenarios()
			}
			res, err := bench.RunQoS(cmd.Context(), d, bench.DefaultQoSPhases, o)
			if err != nil {
				return err
			}
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
			return runScenarios()
		},
	}
	capacity = 25e6
	cmd.Flags().BoolVar(&quick, "quick", false, "short phases, for smoke tests")
	cmd.Flags().Var(rateFlag{&capacity}, "capacity", "configured capacity of each gateway")
	cmd.Flags().StringVar(&svg, "svg", "", "also write the timeline as an SVG plot to this file")
	cmd.Flags().BoolVar(&overhead, "overhead-only", false, "only the shaping cost (QoS on vs --qos-off, interleaved rounds)")
	cmd.Flags().BoolVar(&scenarios, "scenarios-only", false, "only the asymmetric fleet (a tenant on one gateway of two) and the idle reservation (a reserved tenant alone on its server), against the model")
	cmd.Flags().IntVar(&rounds, "overhead-rounds", 8, "rounds of the shaping-cost comparison (each measures both servers)")
	cmd.Flags().DurationVar(&window, "overhead-window", 3*time.Second, "how long each server is measured per round")
	cmd.Flags().StringVar(&alg, "algorithm", "crystal", "the bandwidth controller's algorithm: crystal, maxmin or psfa")
	return cmd
}
