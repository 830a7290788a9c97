package cli

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/facet-sds/facet/internal/bus"
	"github.com/facet-sds/facet/internal/metrics"
	"github.com/facet-sds/facet/internal/server"
	"github.com/facet-sds/facet/internal/tlsconf"
)

func newBusCommand() *cobra.Command {
	var addr, name, logLevel, token, user, password string
	var tlsSrc tlsconf.Source
	var insecure bool
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
			if !tlsSrc.Enabled() && !insecure && !server.Loopback(addr) {
				return fmt.Errorf("--addr %s is not a loopback address: serve the bus over TLS with --tls-cert and --tls-key, or pass --insecure-listen to serve it in clear there", addr)
			}
			so := bus.ServerOptions{Name: name, Addr: addr, Logger: logger, Token: token, User: user, Password: password}
			if so.Token == "" {
				so.Token = os.Getenv("FACET_BUS_TOKEN")
			}
			if so.Password == "" {
				so.Password = os.Getenv("FACET_BUS_PASSWORD")
			}
			if tlsSrc.Enabled() {
				certs, err := tlsconf.Load(tlsSrc, logger)
				if err != nil {
					return err
				}
				so.TLS = certs.Config()
				// Certificates reload as their files change, until the
				// command ends.
				go certs.Watch(cmd.Context(), 3*time.Second)
			}
			srv, err := bus.StartServer(so)
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
				// Its subscriptions are in place before the URL is
				// announced: a sample published at once is not lost.
				if err := conn.Flush(10 * time.Second); err != nil {
					return fmt.Errorf("bus aggregator: %w", err)
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
	f.StringVar(&tlsSrc.CertFile, "tls-cert", "", "accept TLS clients only, with this PEM certificate (chain) file and --tls-key; reloaded when the files change")
	f.StringVar(&tlsSrc.KeyFile, "tls-key", "", "the PEM private key of --tls-cert")
	f.BoolVar(&insecure, "insecure-listen", false, "allow a plain (non-TLS) bus on a non-loopback --addr")
	f.StringVar(&token, "token", "", "the token every client must give (nats://TOKEN@host:4222); prefer FACET_BUS_TOKEN")
	f.StringVar(&user, "user", "", "the user every client must give, with --password (nats://USER:PASS@host:4222)")
	f.StringVar(&password, "password", "", "the password of --user; prefer FACET_BUS_PASSWORD")
	return cmd
}

// busCAFlag is --bus-ca, of the roles that join a bus.
func busCAFlag(f *pflag.FlagSet, caFile *string) {
	f.StringVar(caFile, "bus-ca", "", "PEM CA certificate(s) verifying the bus's TLS (implies TLS; tls:// bus URLs without it verify against the system's roots); credentials go in the bus URL: nats://TOKEN@host:4222 or nats://USER:PASS@host:4222")
}
