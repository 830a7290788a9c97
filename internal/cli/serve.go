package cli

import (
	"log/slog"
	"os"

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
		RunE: roleRun(&configPath, &logLevel, func(cmd *cobra.Command, logger *slog.Logger) error {
			opts.Out = cmd.OutOrStdout()
			blockOptional(cmd, &opts.Block)
			opts.NoControllers = !controllers
			if err := server.CheckDisabledControllers(opts.DisabledControllers); err != nil {
				return err
			}
			return server.Run(cmd.Context(), opts, logger)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&configPath, "config", os.Getenv("FACET_CONFIG"), "optional YAML config file (keys are flag names)")
	f.StringVar(&opts.DataDir, "data", "./data", "data directory")
	f.StringVar(&opts.MetaURL, "meta", "", "metadata store: empty for the embedded bbolt file in --data, bolt://PATH, or redis://HOST:PORT/DB (rediss://[:PASSWORD@]HOST:PORT/DB?ca=FILE over TLS, verified against the CA file or the system roots)")
	requestFlags(f, &opts, &logLevel)
	f.StringVar(&opts.BusURL, "bus", "", "NATS bus to join (nats://host:4222, comma-separated for a cluster, e.g. a facet bus); empty embeds one in the process")
	busCAFlag(f, &opts.BusCA)
	f.StringVar(&opts.BusListen, "bus-listen", "", "let the embedded bus accept connections on this address (other gateways, out-of-process controllers), over TLS with --tls-cert/--tls-dir's certificates; a non-loopback address needs TLS or --insecure-listen; empty opens no port")
	f.BoolVar(&controllers, "controllers", true, "run the automation controllers here; false in a fleet whose controllers run as the facet controller command")
	disableControllerFlag(f, &opts.DisabledControllers)
	f.StringVar(&opts.BackendURL, "backend", "", "remote S3-compatible object store: s3://ACCESS:SECRET@host:port/bucket[/prefix]?region=..[&tls=false or &ca=CA_FILE] (HTTPS by default, verified against ca= or the system roots; credentials also from FACET_BACKEND_ACCESS_KEY/FACET_BACKEND_SECRET_KEY); empty keeps objects in the data directory")
	f.StringVar(&opts.IOModel, "io-model", "per-stream", "how the embedded backend reads objects for GETs: per-stream (one OS thread per large stream, the kernel's I/O scheduler sees each stream) or pool (a fixed pool dispatching chunks round-robin, for comparison)")
	f.BoolVar(&opts.NoSync, "unsafe-no-fsync", false, "skip fsync (benchmarks only: acknowledged writes may be lost on power failure)")
	f.BoolVar(&opts.NoVerifyReads, "unsafe-no-verify-reads", false, "serve GETs without checking stored bytes against their checksums (benchmarks only: damaged bytes would be served)")
	addBlockFlags(f, &opts.Block)
	return cmd
}
