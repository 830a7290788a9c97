package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/bench"
)

func newBenchSoakCommand() *cobra.Command {
	var o bench.SoakOptions
	var mix, small, medium, jsonOut string
	cmd := &cobra.Command{
		Use: "soak",
		Short: "Many keep-alive connections (1,000 by default) of mixed PUT/GET/LIST/DELETE against facet serve for a long time (10 minutes), " +
			"vs the same mix at 16 connections: errors, p50/p99/p99.9, server memory growth and open files; fails on any error or RSS growth >= 10%",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.Mix, err = bench.ParseMix(mix); err != nil {
				return err
			}
			if o.Small, err = bench.ParseBytes(small); err != nil {
				return fmt.Errorf("--small: %w", err)
			}
			if o.Medium, err = bench.ParseBytes(medium); err != nil {
				return fmt.Errorf("--medium: %w", err)
			}
			if o.MediumShare < 0 || o.MediumShare > 1 {
				return errors.New("--medium-share: want a fraction between 0 and 1")
			}
			if o.SecretKey == "" {
				o.SecretKey = os.Getenv("AWS_SECRET_ACCESS_KEY")
			}
			if o.Endpoint != "" && (o.AccessKey == "" || o.SecretKey == "") {
				return errors.New("--endpoint needs --access-key and a secret (env AWS_SECRET_ACCESS_KEY)")
			}
			if o.Endpoint == "" {
				d, err := os.MkdirTemp("", "facet-bench-soak-*")
				if err != nil {
					return err
				}
				defer os.RemoveAll(d)
				o.Dir = d
			}
			o.Log = cmd.ErrOrStderr()
			start := time.Now()
			res, err := bench.RunSoak(cmd.Context(), o)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "\nfacet bench soak (%s, %s; mix %s, PUTs %s or %s (%.0f%% %s), %d keys per connection)\n\n",
				time.Now().UTC().Format(time.RFC3339), time.Since(start).Round(time.Second), mix, small, medium, 100*o.MediumShare, medium, o.Keys)
			bench.WriteSoak(out, res)
			if jsonOut != "" {
				b, _ := json.MarshalIndent(res, "", "  ")
				if err := os.WriteFile(jsonOut, b, 0o644); err != nil {
					return err
				}
			}
			if why := res.Failed(o.MaxRSSGrowth); why != "" {
				return fmt.Errorf("soak failed: %s", why)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Endpoint, "endpoint", "", "soak this server (http://host:port) instead of starting one")
	f.StringVar(&o.AccessKey, "access-key", os.Getenv("AWS_ACCESS_KEY_ID"), "with --endpoint: access key (env AWS_ACCESS_KEY_ID)")
	f.StringVar(&o.SecretKey, "secret-key", "", "with --endpoint: secret key (prefer env AWS_SECRET_ACCESS_KEY: flags show in ps)")
	f.IntVar(&o.ServerPID, "server-pid", 0, "with --endpoint: the server's process id, to sample its memory and open files")
	f.StringVar(&o.Bucket, "bucket", "soak", "bucket (created if missing)")
	f.IntVar(&o.Connections, "connections", 1000, "connections of the soak, each its own keep-alive TCP connection")
	f.IntVar(&o.Baseline, "baseline-connections", 16, "connections of the reference phase run first (0: none)")
	f.DurationVar(&o.Duration, "duration", 10*time.Minute, "measured length of the soak")
	f.DurationVar(&o.BaselineDuration, "baseline-duration", 0, "measured length of the reference phase (default: a tenth of --duration, 10s to 1m)")
	f.DurationVar(&o.Warmup, "warmup", 0, "unmeasured start of each phase; the server's starting memory is sampled at its end (default: a twentieth of --duration, 5s to 30s)")
	f.StringVar(&mix, "mix", "put=30,get=40,list=10,delete=20", "operation mix (put, get, list, delete, head)")
	f.StringVar(&small, "small", "4KiB", "size of small PUTs")
	f.StringVar(&medium, "medium", "256KiB", "size of medium PUTs")
	f.Float64Var(&o.MediumShare, "medium-share", 0.1, "fraction of PUTs that are medium")
	f.IntVar(&o.Keys, "keys", 16, "keys per connection (each connection has its own, so any miss is an error)")
	f.DurationVar(&o.SampleEvery, "sample-every", 5*time.Second, "interval of the server's memory and open-file samples")
	f.Float64Var(&o.MaxRSSGrowth, "max-rss-growth", 10, "server RSS growth (percent, end of the soak over its start) that fails the run")
	f.Uint64Var(&o.Seed, "seed", 1, "seed for choices and contents")
	f.StringVar(&jsonOut, "json", "", "also write the result to this file")
	return cmd
}
