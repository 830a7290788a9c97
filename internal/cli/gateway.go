package cli

import (
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/facet-sds/facet/internal/audit"
	"github.com/facet-sds/facet/internal/buildinfo"
	"github.com/facet-sds/facet/internal/server"
)

func newGatewayCommand() *cobra.Command {
	var (
		opts       server.Options
		configPath string
		logLevel   string
	)
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Run a stateless S3 gateway of a fleet: metadata in Redis, objects in an S3 store, messages on NATS",
		Long: "A gateway keeps nothing of its own: any number run side by side behind a load balancer. It refuses to start\n" +
			"unless --meta, --backend and --bus name the fleet's shared stores, the admin token is given and the master key\n" +
			"comes from FACET_MASTER_KEY or --master-key-file. Controllers run as `facet controller`.",
		RunE: roleRun(&configPath, &logLevel, func(cmd *cobra.Command, logger *slog.Logger) error {
			opts.Out = cmd.OutOrStdout()
			opts.Role = server.RoleGateway
			return server.Run(cmd.Context(), opts, logger)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&configPath, "config", os.Getenv("FACET_CONFIG"), "optional YAML config file (keys are flag names)")
	f.StringVar(&opts.MetaURL, "meta", "", "the fleet's metadata store: redis://HOST:PORT/DB, or rediss://[:PASSWORD@]HOST:PORT/DB?ca=FILE over TLS (required)")
	f.StringVar(&opts.BusURL, "bus", "", "the fleet's NATS bus: nats://host:4222, comma-separated for a cluster (required)")
	busCAFlag(f, &opts.BusCA)
	f.StringVar(&opts.BackendURL, "backend", "", "the fleet's object store: s3://ACCESS:SECRET@host:port/bucket[/prefix]?region=..[&tls=false or &ca=CA_FILE] (HTTPS by default, verified against ca= or the system roots; required; credentials also from FACET_BACKEND_ACCESS_KEY/FACET_BACKEND_SECRET_KEY)")
	f.StringVar(&opts.MasterKeyFile, "master-key-file", "", "file holding the fleet's master key (raw 32 bytes or base64), read when FACET_MASTER_KEY is unset")
	requestFlags(f, &opts, &logLevel)
	return cmd
}

// roleRun is the RunE of a long-running role: configuration (flags, then
// FACET_* environment, then the YAML file), the JSON logger, then run.
func roleRun(configPath, logLevel *string, run func(cmd *cobra.Command, logger *slog.Logger) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		if err := applyConfig(cmd.Flags(), *configPath, os.Getenv); err != nil {
			return err
		}
		logger, err := newLogger(*logLevel)
		if err != nil {
			return err
		}
		// Which build wrote the log, first: what a bug report needs.
		b := buildinfo.Get()
		logger.Info("facet "+cmd.Name(), "version", b.Version, "commit", b.Commit, "go", b.GoVersion, "built", b.Date)
		return run(cmd, logger)
	}
}

// requestFlags are the flags of the roles that serve S3 requests (serve
// and gateway): listeners, the admin token, metrics and shutdown.
func requestFlags(f *pflag.FlagSet, opts *server.Options, logLevel *string) {
	f.StringVar(&opts.S3Addr, "s3-addr", "127.0.0.1:9000", "S3 API listen address")
	f.StringVar(&opts.AdminAddr, "admin-addr", "127.0.0.1:9001", "admin API listen address")
	f.StringVar(&opts.AdminToken, "admin-token", "", "admin bearer token (serve generates and prints one when unset; prefer FACET_ADMIN_TOKEN)")
	f.StringVar(&opts.Region, "region", "us-east-1", "region reported to S3 clients")
	f.StringSliceVar(&opts.Domains, "domain", []string{"localhost"}, "base domains for virtual-host style requests (<bucket>.<domain>)")
	f.StringVar(logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.DurationVar(&opts.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long in-flight requests may run after SIGTERM")
	listenerFlags(f, opts)
	f.StringVar(&opts.MetricsToken, "metrics-token", "", "bearer token for the admin listener's /metrics only (the admin token works there too); prefer FACET_METRICS_TOKEN")
	f.BoolVar(&opts.MetricsBucketLabels, "metrics-bucket-labels", false, "add bucket labels to the Prometheus request and byte counters (one series set per bucket)")
	f.Int64Var(&opts.TenantMaxUploads, "tenant-max-uploads", 1000, "open multipart uploads a tenant may have where no quota sets their number (0: no cap)")
	f.IntVar(&opts.TenantMaxConnections, "tenant-max-connections", 256, "S3 requests a tenant may have in flight on this gateway; more are refused with 503 SlowDown (0: no cap)")
	f.StringVar(&opts.Node, "node", "", "this gateway's name in workload-metric samples (default: host name and a random suffix)")
	f.DurationVar(&opts.MetricsPeriod, "metrics-period", time.Second, "workload-metric period: each node publishes one sample per metric per period")
	qosFlags(f, &opts.QoS, true)
	contextFlags(f, &opts.Context)
	f.BoolVar(&opts.NoWorkloadMetrics, "no-workload-metrics", false, "do not measure requests for dynamic policies (their controllers then hold)")
	f.StringVar(&opts.CacheDir, "cache-dir", "", "local fast disk for the caching filter's object cache (default: DATA/cache for serve; none for gateway)")
	f.StringVar(&opts.WasmCacheDir, "wasm-cache-dir", "", "compiled WASM filter modules, reused across restarts (default: DATA/wasm/cache for serve; the user's cache directory, e.g. ~/.cache/facet/wasm, for gateway; \"off\" for none)")
	wasmBudgetFlags(f, &opts.WasmBudget)
	f.DurationVar(&opts.TrashPurgeEvery, "trash-purge-every", 10*time.Minute, "how often the recycle bin purges objects past their max_time")
	auditFlags(f, &opts.Audit)
}

// auditFlags are the audit log's (serve and gateway).
func auditFlags(f *pflag.FlagSet, a *server.AuditOptions) {
	f.StringVar(&a.Path, "audit-log", "", "write the audit log (JSON lines: admin actions, S3 mutations, access denials, dashboard sign-ins) to this file, rotated by size; \"-\" for stdout (docs/audit.md)")
	a.MaxSize = audit.DefaultMaxSize
	f.Var((*sizeValue)(&a.MaxSize), "audit-log-max-size", "rotate the audit log before it passes this size (bytes, KiB, MiB or GiB)")
	f.IntVar(&a.Keep, "audit-log-keep", audit.DefaultKeep, "rotated audit log files kept (PATH.1 newest ... PATH.N)")
}

// sizeValue is a flag of a size in bytes, KiB, MiB or GiB.
type sizeValue int64

func (v *sizeValue) String() string { return strconv.FormatInt(int64(*v), 10) }
func (v *sizeValue) Type() string   { return "size" }
func (v *sizeValue) Set(s string) error {
	n, err := parseSizeFlag(s)
	if err != nil {
		return err
	}
	*v = sizeValue(n)
	return nil
}

// listenerFlags are the timeouts and TLS of every HTTP listener (serve,
// gateway, block, controller).
func listenerFlags(f *pflag.FlagSet, opts *server.Options) {
	f.DurationVar(&opts.IdleTimeout, "idle-timeout", 2*time.Minute, "close a keep-alive connection idle this long (every HTTP listener; negative: never)")
	f.DurationVar(&opts.BodyReadTimeout, "body-read-timeout", 30*time.Second, "cut a request whose body stops arriving for this long, with RequestTimeout; also the grace before --body-min-rate applies (negative: no deadline)")
	f.Int64Var(&opts.BodyMinRate, "body-min-rate", 1024, "slowest average rate, in bytes per second, a request body may arrive at after --body-read-timeout (negative: no minimum)")
	f.StringVar(&opts.TLS.CertFile, "tls-cert", "", "serve every HTTP listener (S3, admin) over TLS with this PEM certificate (chain) file, with --tls-key; reloaded when the file changes or on SIGHUP")
	f.StringVar(&opts.TLS.KeyFile, "tls-key", "", "the PEM private key of --tls-cert")
	f.StringVar(&opts.TLS.Dir, "tls-dir", "", "serve TLS with the certificates of this directory, chosen by SNI name: NAME.crt and NAME.key pairs, each serving the DNS names of its certificate; default.crt serves clients without SNI (docs/security.md)")
	f.DurationVar(&opts.TLSReloadEvery, "tls-reload-every", 3*time.Second, "how often the certificate files are checked for a change, reloaded without a restart (0: only on SIGHUP)")
	f.BoolVar(&opts.InsecureListen, "insecure-listen", false, "allow plain HTTP listeners on non-loopback addresses (without it, a non-loopback address needs TLS)")
}
