package cli

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/server"
)

func newControllerCommand() *cobra.Command {
	var (
		opts       server.Options
		configPath string
		logLevel   string
	)
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the automation controllers of a fleet (one active instance, elected by a lease in the metadata store)",
		RunE: roleRun(&configPath, &logLevel, func(cmd *cobra.Command, logger *slog.Logger) error {
			opts.Role = server.RoleController
			if err := server.CheckDisabledControllers(opts.DisabledControllers); err != nil {
				return err
			}
			// The controller role's listener drains for 5 s (it has no
			// --shutdown-timeout flag).
			opts.ShutdownTimeout = 5 * time.Second
			return server.Run(cmd.Context(), opts, logger)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&configPath, "config", os.Getenv("FACET_CONFIG"), "optional YAML config file (keys are flag names)")
	f.StringVar(&opts.DataDir, "data", "./data", "directory of master.key (unless FACET_MASTER_KEY is set)")
	f.StringVar(&opts.MetaURL, "meta", "", "the fleet's shared metadata store: redis://HOST:PORT/DB, or rediss://[:PASSWORD@]HOST:PORT/DB?ca=FILE over TLS")
	f.StringVar(&opts.BusURL, "bus", "", "the fleet's NATS bus (nats://host:4222, comma-separated for a cluster)")
	busCAFlag(f, &opts.BusCA)
	f.DurationVar(&opts.MetricsPeriod, "metrics-period", time.Second, "workload-metric period (the gateways' --metrics-period)")
	f.StringVar(&opts.Node, "id", "", "this instance's name in the lease (default: host name and a random suffix)")
	f.DurationVar(&opts.LeaseTTL, "lease-ttl", 3*time.Second, "how long the controller lease lasts unrenewed (renewed every third of it)")
	f.StringVar(&opts.AdminAddr, "admin-addr", "", "serve /healthz (the lease's state) and the admin API here (tenants, keys, groups, data keys, policies, metrics, controllers, nodes; what needs a gateway answers 501); empty opens no port")
	f.StringVar(&opts.AdminToken, "admin-token", "", "bearer token for GET /v1/controllers; prefer FACET_ADMIN_TOKEN")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	listenerFlags(f, &opts)
	auditFlags(f, &opts.Audit)
	qosFlags(f, &opts.QoS, false)
	disableControllerFlag(f, &opts.DisabledControllers)
	return cmd
}

// disableControllerFlag is --disable-controller, of serve and controller.
func disableControllerFlag(f *pflag.FlagSet, names *[]string) {
	f.StringSliceVar(names, "disable-controller", nil, "do not run this built-in controller (repeatable, or comma-separated): "+
		strings.Join(server.BuiltinControllers(), ", ")+"; e.g. bandwidth when an out-of-process controller assigns the bandwidth shares (docs/controllers.md)")
}

// jsonLogger is the JSON logger of every long-running command. Durations
// are written as milliseconds under the key with "_ms" appended
// ("duration_ms": 1.25), not as slog's bare nanoseconds, so that every
// line reads alike and a person can read them.
func jsonLogger(w io.Writer, lvl slog.Leveler) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lvl, ReplaceAttr: durationsInMS}))
}

func durationsInMS(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() != slog.KindDuration {
		return a
	}
	// Microsecond resolution: finer is noise in a log.
	return slog.Float64(a.Key+"_ms", math.Round(float64(a.Value.Duration())/1e3)/1e3)
}

// newLogger is the JSON logger on stderr of the long-running commands, at
// level. go-redis logs through a process-wide logger; it is sent there too,
// at most one message a minute.
func newLogger(level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	logger := jsonLogger(os.Stderr, lvl)
	redis.SetLogger(&throttledLog{next: meta.RedisLog{Logger: logger}, period: time.Minute})
	return logger, nil
}
