package cli

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/bus"
	"github.com/facet-sds/facet/internal/metrics"
)

func newBusCommand() *cobra.Command {
	var addr, name, logLevel string
	var aggregate bool
	var period time.Duration
	cmd := &cobra.Command{
		Use:   "bus",
		Short: "Run a standalone NATS server for Facet's bus (metrics, controllers); gateways join it with serve --bus nats://ADDR",
		RunE: func(cmd *cobra.Command, _ []string) error {
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			logger := jsonLogger(os.Stderr, lvl)
			if addr == "" {
				return fmt.Errorf("--addr: a standalone bus needs an address to listen on")
			}
			srv, err := bus.StartServer(bus.ServerOptions{Name: name, Addr: addr, Logger: logger})
			if err != nil {
				return err
			}
			defer srv.Close()
			if aggregate {
				// A workload-metric process: merges the gateways' samples and
				// publishes aggregates and watched targets' values, for
				// out-of-process controllers.
				conn, err := srv.Connect(name + "-aggregator")
				if err != nil {
					return err
				}
				defer conn.Close()
				agg := metrics.NewAggregator(metrics.AggregatorConfig{Bus: conn, Period: period, Logger: logger})
				if err := agg.Start(cmd.Context()); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "facet bus listening on %s\n", srv.URL())
			logger.Info("bus ready", "url", srv.URL())
			<-cmd.Context().Done()
			st, err := srv.Stats()
			if err == nil {
				logger.Info("bus stopping", "in_msgs", st.InMsgs, "in_bytes", st.InBytes, "out_msgs", st.OutMsgs, "out_bytes", st.OutBytes)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:4222", "listen address (port 0 picks one, printed on start)")
	f.StringVar(&name, "name", "facet-bus", "server name, for monitoring")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.BoolVar(&aggregate, "aggregate", false, "also merge the gateways' metric samples and publish the aggregates (facet.metric.*), for out-of-process controllers")
	f.DurationVar(&period, "metrics-period", time.Second, "the gateways' workload-metric period (with --aggregate)")
	return cmd
}
