package cli

import (
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/server"
)

func newServeCommand() *cobra.Command {
	var (
		opts        server.Options
		configPath  string
		logLevel    string
		controllers bool
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run Facet on one machine with the embedded metadata store and filesystem backend",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyConfig(cmd.Flags(), configPath, os.Getenv); err != nil {
				return err
			}
			logger, err := newLogger(logLevel)
			if err != nil {
				return err
			}
			opts.Out = cmd.OutOrStdout()
			opts.NoControllers = !controllers
			return server.Run(cmd.Context(), opts, logger)
		},
	}
	f := cmd.Flags()
	f.StringVar(&configPath, "config", os.Getenv("FACET_CONFIG"), "optional YAML config file (keys are flag names)")
	f.StringVar(&opts.DataDir, "data", "./data", "data directory")
	f.StringVar(&opts.MetaURL, "meta", "", "metadata store: empty for the embedded bbolt file in --data, bolt://PATH, or redis://HOST:PORT/DB")
	f.StringVar(&opts.S3Addr, "s3-addr", "127.0.0.1:9000", "S3 API listen address")
	f.StringVar(&opts.AdminAddr, "admin-addr", "127.0.0.1:9001", "admin API listen address")
	f.StringVar(&opts.AdminToken, "admin-token", "", "admin bearer token (generated and printed once when unset)")
	f.StringVar(&opts.Region, "region", "us-east-1", "region reported to S3 clients")
	f.StringSliceVar(&opts.Domains, "domain", []string{"localhost"}, "base domains for virtual-host style requests (<bucket>.<domain>)")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.DurationVar(&opts.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long in-flight requests may run after SIGTERM")
	f.StringVar(&opts.MetricsToken, "metrics-token", "", "bearer token for the admin listener's /metrics only (the admin token works there too); prefer FACET_METRICS_TOKEN")
	f.BoolVar(&opts.MetricsBucketLabels, "metrics-bucket-labels", false, "add bucket labels to the Prometheus request and byte counters (one series set per bucket)")
	f.StringVar(&opts.BusURL, "bus", "", "NATS bus to join (nats://host:4222, comma-separated for a cluster, e.g. a facet bus); empty embeds one in the process")
	f.StringVar(&opts.BusListen, "bus-listen", "", "let the embedded bus accept connections on this address (other gateways, out-of-process controllers); empty opens no port")
	f.StringVar(&opts.Node, "node", "", "this gateway's name in workload-metric samples (default: host name and a random suffix)")
	f.DurationVar(&opts.MetricsPeriod, "metrics-period", time.Second, "workload-metric period: each node publishes one sample per metric per period")
	f.BoolVar(&opts.NoWorkloadMetrics, "no-workload-metrics", false, "do not measure requests for dynamic policies (their controllers then hold)")
	f.BoolVar(&controllers, "controllers", true, "run the automation controllers here; false in a fleet whose controllers run as `facet controller`")
	f.StringVar(&opts.BackendURL, "backend", "", "remote S3-compatible object store: s3://ACCESS:SECRET@host:port/bucket[/prefix]?region=..&tls=false (credentials also from FACET_BACKEND_ACCESS_KEY/FACET_BACKEND_SECRET_KEY); empty keeps objects in the data directory")
	f.StringVar(&opts.IOModel, "io-model", "per-stream", "how the embedded backend reads objects for GETs: per-stream (one OS thread per large stream, the kernel's I/O scheduler sees each stream) or pool (a fixed pool dispatching chunks round-robin, for comparison)")
	f.BoolVar(&opts.NoSync, "unsafe-no-fsync", false, "skip fsync (benchmarks only: acknowledged writes may be lost on power failure)")
	return cmd
}
