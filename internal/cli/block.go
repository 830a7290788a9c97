package cli

import (
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/facet-sds/facet/internal/server"
)

// DefaultNBDAddr is where NBD clients find Facet (the IANA NBD port).
const DefaultNBDAddr = "127.0.0.1:10809"

// addBlockFlags declares the block stage's flags on serve and block.
func addBlockFlags(f *pflag.FlagSet, bo *server.BlockOptions) {
	f.StringVar(&bo.Addr, "nbd-addr", DefaultNBDAddr, "NBD listen address for block volumes (\"off\": no block stage); every client must STARTTLS (TLS-PSK) unless --nbd-allow-plain-loopback")
	f.BoolVar(&bo.AllowPlainLoopback, "nbd-allow-plain-loopback", false, "accept plain NBD from loopback, for the volumes of tenants that allow it (facet ctl tenant set NAME --allow-plain-nbd); a local port forwarder makes any client look local")
	f.StringVar(&bo.TLSDir, "nbd-tls-dir", "", "NBD client-certificate mode's directory (CA, server certificate; empty: DATA/nbd-tls, created on first start); tenants' TLS-PSK keys, the default, live in the metadata store (facet ctl volume client-psk)")
}

// blockOptional makes the default NBD address optional: a second server
// on the machine runs without NBD rather than failing, while an address
// given explicitly must be bound.
func blockOptional(cmd *cobra.Command, bo *server.BlockOptions) {
	bo.Optional = !cmd.Flags().Changed("nbd-addr")
}

func newBlockCommand() *cobra.Command {
	var (
		opts       server.Options
		configPath string
		logLevel   string
	)
	cmd := &cobra.Command{
		Use:   "block",
		Short: "Run the block stage alone: NBD volumes and the admin API for pools and volumes, without the S3 gateway",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyConfig(cmd.Flags(), configPath, os.Getenv); err != nil {
				return err
			}
			logger, err := newLogger(logLevel)
			if err != nil {
				return err
			}
			opts.Out = cmd.OutOrStdout()
			opts.Role = server.RoleBlock
			return server.Run(cmd.Context(), opts, logger)
		},
	}
	f := cmd.Flags()
	f.StringVar(&configPath, "config", os.Getenv("FACET_CONFIG"), "optional YAML config file (keys are flag names)")
	f.StringVar(&opts.DataDir, "data", "./data", "data directory")
	f.StringVar(&opts.MetaURL, "meta", "", "metadata store: empty for the embedded bbolt file in --data, bolt://PATH, or redis://HOST:PORT/DB (rediss://[:PASSWORD@]HOST:PORT/DB?ca=FILE over TLS, verified against the CA file or the system roots)")
	f.StringVar(&opts.AdminAddr, "admin-addr", "127.0.0.1:9001", "admin API listen address")
	f.StringVar(&opts.AdminToken, "admin-token", "", "admin bearer token (generated and printed once when unset)")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.DurationVar(&opts.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long in-flight requests may run after SIGTERM")
	listenerFlags(f, &opts)
	addBlockFlags(f, &opts.Block)
	auditFlags(f, &opts.Audit)
	return cmd
}
