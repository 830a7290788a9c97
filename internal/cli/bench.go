package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/facet-sds/facet/internal/bench"
	"github.com/facet-sds/facet/internal/bench/datagen"
)

func newBenchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure what Facet delivers and costs on this machine, each against a baseline in the same run",
		Long: `Measure what Facet delivers and costs on this machine. Each benchmark runs Facet and a
baseline (the same store without Facet's layer, another server, Facet with the feature off) in the
same run and prints both, with their ratio.

What each benchmark reproduces, the published figures it is compared with, and the results recorded
so far are in docs/benchmarks/ (one page per subject; docs/benchmarks.md is the index).`,
	}
	var dir string
	var quick bool
	spine := &cobra.Command{
		Use:   "spine",
		Short: "What the S3 front end costs: PUT/GET through facet serve (HTTP, signed requests) vs the same store called in-process",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				d, err := os.MkdirTemp("", "facet-bench-*")
				if err != nil {
					return err
				}
				defer os.RemoveAll(d)
				dir = d
			}
			scenarios := bench.DefaultSpineScenarios
			if quick {
				scenarios = []bench.SpineScenario{{Size: 4 << 10, Ops: 200, Concurrency: 1}, {Size: 8 << 20, Ops: 4, Concurrency: 2}}
			}
			start := time.Now()
			rows, err := bench.RunSpine(cmd.Context(), dir, scenarios, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "\nfacet bench spine (%s, %s)\n\n", time.Now().UTC().Format(time.RFC3339), time.Since(start).Round(time.Second))
			bench.WriteTable(out, rows)
			return nil
		},
	}
	spine.Flags().StringVar(&dir, "dir", "", "data directory (default: a temporary one, removed afterwards)")
	spine.Flags().BoolVar(&quick, "quick", false, "small run, for smoke tests")
	cmd.AddCommand(spine, newBenchPipelineCommand(), newBenchRangeCommand(), newBenchRunCommand(), newBenchReplayCommand(), newBenchCompareCommand(),
		newBenchTraceCommand(), newBenchDatagenCommand())
	cmd.AddCommand(newBenchMetricsCommand())
	cmd.AddCommand(newBenchStreamsCommand())
	cmd.AddCommand(newBenchIntegrityCommand())
	cmd.AddCommand(newBenchVersioningCommand())
	cmd.AddCommand(newBenchAuditCommand())
	cmd.AddCommand(newBenchQuotaCommand())
	cmd.AddCommand(newBenchWasmCommand())
	cmd.AddCommand(newBenchNBDCommand())
	cmd.AddCommand(newBenchQoSCommand())
	cmd.AddCommand(newBenchRemoteCommand())
	cmd.AddCommand(newBenchCacheCommand())
	cmd.AddCommand(newBenchSoakCommand())
	cmd.AddCommand(newBenchTLSCommand())
	return cmd
}

// tenantFlags are the one-liner form of a scenario's tenants.
type tenantFlags struct {
	name, endpoint, access, secret, region, bucket string
	tenants, concurrency, keys, prepopulate        int
	rate                                           float64
	ops                                            int64
	mix, size, data                                string
	duration, interval                             time.Duration
	seed                                           uint64
}

func (f *tenantFlags) register(fs *pflag.FlagSet, replay bool) {
	fs.StringVar(&f.name, "name", "", "scenario name (default: from the file, or \"bench\")")
	fs.StringVar(&f.endpoint, "endpoint", os.Getenv("FACET_BENCH_ENDPOINT"), "S3 endpoint, http://host:port (env FACET_BENCH_ENDPOINT)")
	fs.StringVar(&f.access, "access-key", os.Getenv("AWS_ACCESS_KEY_ID"), "access key (env AWS_ACCESS_KEY_ID)")
	fs.StringVar(&f.secret, "secret-key", "", "secret key (prefer env AWS_SECRET_ACCESS_KEY: flags show in ps)")
	fs.StringVar(&f.region, "region", "us-east-1", "region to sign for")
	fs.StringVar(&f.data, "data", "", "object contents: zeros, random, realistic[:RATIO], mimic:SAMPLE (default realistic:2)")
	fs.Uint64Var(&f.seed, "seed", 0, "seed for keys, sizes and contents (default 1)")
	fs.DurationVar(&f.interval, "interval", 0, "reporting interval (default 1s)")
	if replay {
		return
	}
	fs.StringVar(&f.bucket, "bucket", "bench", "bucket (with --tenants N > 1, suffixed -1..-N)")
	fs.IntVar(&f.tenants, "tenants", 1, "number of identical tenants t1..tN (same credentials)")
	fs.IntVar(&f.concurrency, "concurrency", 1, "requests in flight per tenant")
	fs.Float64Var(&f.rate, "rate", 0, "open loop: ops/s per tenant (0: closed loop)")
	fs.Int64Var(&f.ops, "ops", 0, "stop each tenant after this many ops (0: no limit)")
	fs.StringVar(&f.mix, "mix", "put", "operation mix, e.g. get=70,put=30 (get, put, head, delete, list)")
	fs.StringVar(&f.size, "size", "4KiB", "object size: 4KiB | uniform:1KiB-1MiB | lognormal:1MB,0.5MB | class:small[,medium,large]")
	fs.IntVar(&f.keys, "keys", 1000, "keys in each tenant's key space")
	fs.IntVar(&f.prepopulate, "prepopulate", 0, "keys written before the run (-1: all)")
	fs.DurationVar(&f.duration, "duration", 0, "run length (with --ops, whichever comes first)")
}

func (f *tenantFlags) secretKey() string {
	if f.secret != "" {
		return f.secret
	}
	return os.Getenv("AWS_SECRET_ACCESS_KEY")
}

// scenario builds or amends a scenario: flags that were set override the
// file's values on every tenant; endpoint and credentials fill tenants
// that have none.
func (f *tenantFlags) scenario(fs *pflag.FlagSet, file string) (*bench.Scenario, error) {
	var sc *bench.Scenario
	if file != "" {
		var err error
		if sc, err = bench.LoadScenario(file); err != nil {
			return nil, err
		}
	} else {
		sc = &bench.Scenario{Name: "bench"}
		for i := range max(f.tenants, 1) {
			t := bench.Tenant{Name: fmt.Sprintf("t%d", i+1), Bucket: f.bucket}
			if f.tenants > 1 {
				t.Bucket = fmt.Sprintf("%s-%d", f.bucket, i+1)
			}
			sc.Tenants = append(sc.Tenants, t)
		}
	}
	changed := func(name string) bool { return file == "" || fs.Changed(name) }
	if changed("name") && f.name != "" {
		sc.Name = f.name
	}
	if changed("duration") && f.duration > 0 {
		sc.Duration = bench.Duration(f.duration)
	}
	if changed("interval") && f.interval > 0 {
		sc.Interval = bench.Duration(f.interval)
	}
	if changed("seed") && f.seed > 0 {
		sc.Seed = f.seed
	}
	var err error
	var mix bench.Mix
	var size bench.SizeDist
	var data datagen.Spec
	if fs.Lookup("mix") != nil && changed("mix") {
		if mix, err = bench.ParseMix(f.mix); err != nil {
			return nil, err
		}
	}
	if fs.Lookup("size") != nil && changed("size") {
		if size, err = bench.ParseSizeDist(f.size); err != nil {
			return nil, err
		}
	}
	if f.data != "" {
		if data, err = datagen.ParseSpec(f.data); err != nil {
			return nil, err
		}
	}
	for i := range sc.Tenants {
		t := &sc.Tenants[i]
		if t.Endpoint == "" || fs.Changed("endpoint") {
			t.Endpoint = f.endpoint
		}
		if t.AccessKey == "" && t.AccessKeyEnv == "" || fs.Changed("access-key") {
			t.AccessKey = f.access
		}
		if t.SecretKey == "" && t.SecretKeyEnv == "" || fs.Changed("secret-key") {
			t.SecretKey = f.secretKey()
		}
		if t.Region == "" || fs.Changed("region") {
			t.Region = f.region
		}
		if data.Kind != "" {
			t.Data = data
		}
		if fs.Lookup("mix") == nil {
			continue // replay: the trace decides the rest
		}
		if mix != nil {
			t.Mix = mix
		}
		if size.Dist != "" {
			t.Size = size
		}
		if changed("concurrency") {
			t.Concurrency = f.concurrency
		}
		if changed("rate") {
			t.Rate = f.rate
		}
		if changed("ops") {
			t.Ops = f.ops
		}
		if changed("keys") {
			t.Keys.Count = f.keys
		}
		if changed("prepopulate") {
			t.Keys.Prepopulate = f.prepopulate
		}
	}
	return sc, nil
}

func newBenchRunCommand() *cobra.Command {
	var (
		f          tenantFlags
		file       string
		out        string
		cpuprofile string
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a benchmark scenario (file or flags) against any S3 endpoint",
		Long: `Run a multi-tenant workload against S3 endpoints and report, per tenant and
operation and per interval, ops/s, MB/s, errors and latency percentiles.

A scenario file (YAML or JSON; see bench/scenarios/) describes tenants, each
with endpoint, credentials, op mix, size distribution, contents, key space,
concurrency, rate and phases. Flags describe a one-tenant (or --tenants N)
scenario in one line, or override a file's values on every tenant.

With --out DIR, writes DIR/result.json (full report), DIR/throughput.png
(per-tenant timeline) and DIR/summary.txt; the summary is printed either way.

  facet bench run --endpoint http://127.0.0.1:9000 --size 4KiB --mix put --concurrency 16 --duration 10s
  facet bench run -f bench/scenarios/two-tenants.yaml --out results/two`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sc, err := f.scenario(cmd.Flags(), file)
			if err != nil {
				return err
			}
			if cpuprofile != "" {
				pf, err := os.Create(cpuprofile)
				if err != nil {
					return err
				}
				defer pf.Close()
				if err := pprof.StartCPUProfile(pf); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			return runAndReport(cmd, sc, out)
		},
	}
	cmd.Flags().StringVar(&cpuprofile, "cpuprofile", "", "write the client's CPU profile here (to check what the client spends)")
	cmd.Flags().StringVarP(&file, "scenario", "f", "", "scenario file (YAML or JSON)")
	cmd.Flags().StringVar(&out, "out", "", "directory for result.json, throughput.png and summary.txt")
	f.register(cmd.Flags(), false)
	return cmd
}

func runAndReport(cmd *cobra.Command, sc *bench.Scenario, out string) error {
	rep, runErr := bench.Run(cmd.Context(), sc, bench.RunOptions{Log: cmd.ErrOrStderr()})
	if rep == nil {
		return runErr
	}
	stdout := cmd.OutOrStdout()
	if out != "" {
		if err := writeResults(out, rep); err != nil {
			return err
		}
		defer fmt.Fprintf(stdout, "results in %s (result.json, throughput.png, summary.txt)\n", out)
	}
	rep.WriteSummary(stdout)
	return runErr
}

func writeResults(dir string, rep *bench.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name string, f func(io.Writer) error) error {
		return writeFile(filepath.Join(dir, name), f)
	}
	if err := write("result.json", rep.WriteJSON); err != nil {
		return err
	}
	if err := write("throughput.png", rep.WritePNG); err != nil {
		return err
	}
	return write("summary.txt", func(w io.Writer) error { rep.WriteSummary(w); return nil })
}

func newBenchReplayCommand() *cobra.Command {
	var (
		f     tenantFlags
		file  string
		out   string
		trace bench.TraceSpec
	)
	cmd := &cobra.Command{
		Use:   "replay TRACE.csv",
		Short: "Replay a CSV trace (timestamp,tenant,op,bucket,key,size) with time scaling",
		Long: `Replay a trace in the CSV format documented in bench/traces/README.md.

Trace tenants are matched by name to the tenants of --scenario; without a
scenario file, every trace tenant uses --endpoint and the given credentials.
Objects the trace reads before writing are created first, with their
recorded sizes. --speed 10 replays ten times faster; each tenant has at most
--concurrency requests in flight, and replay waits rather than drops when
they are all busy (late starts are reported).

  facet bench replay bench/traces/idiada.csv --endpoint http://127.0.0.1:9000 --speed 10`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			trace.File = args[0]
			sc, err := f.scenario(cmd.Flags(), file)
			if err != nil {
				return err
			}
			if file == "" {
				// One tenant per trace tenant, all with the flags' credentials.
				recs, err := bench.LoadTrace(trace.File)
				if err != nil {
					return err
				}
				proto := sc.Tenants[0]
				sc.Tenants = nil
				var names []string
				for _, r := range recs {
					if !slices.Contains(names, r.Tenant) {
						names = append(names, r.Tenant)
					}
				}
				slices.Sort(names)
				for _, n := range names {
					t := proto
					t.Name, t.Bucket = n, ""
					sc.Tenants = append(sc.Tenants, t)
				}
				if f.name == "" {
					sc.Name = "replay " + filepath.Base(trace.File)
				}
			}
			spec := trace
			sc.Trace = &spec
			return runAndReport(cmd, sc, out)
		},
	}
	cmd.Flags().StringVarP(&file, "scenario", "f", "", "scenario file naming the trace's tenants")
	cmd.Flags().StringVar(&out, "out", "", "directory for result.json, throughput.png and summary.txt")
	cmd.Flags().Float64Var(&trace.Speed, "speed", 1, "time scaling: 2 replays twice as fast")
	cmd.Flags().IntVar(&trace.Concurrency, "concurrency", 16, "requests in flight per tenant, at most")
	cmd.Flags().IntVar(&trace.Limit, "limit", 0, "replay only the first N records")
	cmd.Flags().Var((*durationFlag)(&trace.Window), "window", "replay only the first part of the trace (trace time, e.g. 10m)")
	f.register(cmd.Flags(), true)
	return cmd
}

// durationFlag lets a bench.Duration be a flag.
type durationFlag bench.Duration

func (d *durationFlag) String() string { return time.Duration(*d).String() }
func (d *durationFlag) Type() string   { return "duration" }
func (d *durationFlag) Set(s string) error {
	v, err := time.ParseDuration(s)
	*d = durationFlag(v)
	return err
}

func newBenchCompareCommand() *cobra.Command {
	var (
		labels   string
		o        bench.CompareOptions
		jsonDiff bool
	)
	cmd := &cobra.Command{
		Use:   "compare BASE.json OTHER.json [MORE.json...]",
		Short: "Print reports side by side with throughput ratios",
		Long: `Print two or more result.json reports side by side, per tenant and operation:
ops/s, MB/s, p50 and p99 of each, and the ratios of one report (--subject,
default the last) over each of the others. "compare old.json new.json" shows
new/old. Rows match by tenant name, or by position when the reports run the
same scenario under different tenant names.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var reps []*bench.Report
			for _, a := range args {
				r, err := bench.LoadReport(a)
				if err != nil {
					return err
				}
				reps = append(reps, r)
			}
			if labels != "" {
				o.Labels = strings.Split(labels, ",")
			}
			if jsonDiff {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(reps)
			}
			return bench.Compare(cmd.OutOrStdout(), reps, o)
		},
	}
	cmd.Flags().StringVar(&labels, "labels", "", "comma-separated names for the reports")
	cmd.Flags().IntVar(&o.Subject, "subject", 0, "report (1-based) whose ratios over the others are shown (default: the last)")
	cmd.Flags().BoolVar(&o.Markdown, "markdown", false, "print a Markdown table")
	cmd.Flags().BoolVar(&o.NoHeader, "no-header", false, "with --markdown, leave out the header (to append rows)")
	cmd.Flags().BoolVar(&jsonDiff, "json", false, "print the loaded reports as one JSON array")
	_ = cmd.Flags().MarkHidden("json")
	return cmd
}

func newBenchTraceCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "trace", Short: "Work with CSV traces"}
	var (
		o       bench.SynthOptions
		tenants string
		out     string
	)
	synth := &cobra.Command{
		Use:   "synth",
		Short: "Write a synthetic trace: a write-heavy document store (idiada) or a read-heavy web site (arctur)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Tenants = strings.Split(tenants, ",")
			recs, err := bench.Synthesize(o)
			if err != nil {
				return err
			}
			comment := fmt.Sprintf("synthetic %s trace: facet bench trace synth --kind %s --tenants %s --duration %s --rate %g --seed %d\n"+
				"shape: %s", o.Kind, o.Kind, tenants, o.Duration, o.Rate, o.Seed, map[string]string{
				"idiada": "write-dominated documents (~80% of bytes written), mean object 0.91 MB",
				"arctur": "read-dominated web objects (>99.9% of bytes read), mean object 0.28 MB, Zipf popularity",
			}[o.Kind])
			return toOutput(cmd, out, func(w io.Writer) error { return bench.WriteTrace(w, comment, recs) })
		},
	}
	synth.Flags().StringVar(&o.Kind, "kind", "idiada", "idiada (write-heavy documents, ~80% of bytes written) or arctur (read-heavy web objects, popular ones read most)")
	synth.Flags().StringVar(&tenants, "tenants", "t1", "comma-separated tenant names, one independent stream each")
	synth.Flags().DurationVar(&o.Duration, "duration", 5*time.Minute, "trace length")
	synth.Flags().Float64Var(&o.Rate, "rate", 0, "mean ops/s per tenant (default: idiada 2, arctur 8)")
	synth.Flags().Uint64Var(&o.Seed, "seed", 1, "random seed")
	synth.Flags().StringVarP(&out, "output", "o", "", "file to write (default stdout)")
	cmd.AddCommand(synth)
	return cmd
}

func newBenchDatagenCommand() *cobra.Command {
	var (
		spec, sizeS, out, profile string
		seed                      uint64
		measure                   bool
	)
	cmd := &cobra.Command{
		Use:   "datagen",
		Short: "Generate benchmark contents, measure the generator, or profile a sample",
		Long: `Generate object contents as the benchmark does (zeros, random, realistic:RATIO,
mimic:SAMPLE), to a file or stdout; --measure reports the generator's speed
and the gzip and zstd ratios the contents reach; --profile SAMPLE prints the
per-chunk compressibility profile that mimic:SAMPLE reproduces.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			if profile != "" {
				p, err := datagen.ProfileFile(profile)
				if err != nil {
					return err
				}
				return json.NewEncoder(w).Encode(p)
			}
			ds, err := datagen.ParseSpec(spec)
			if err != nil {
				return err
			}
			src, err := datagen.New(ds)
			if err != nil {
				return err
			}
			size, err := bench.ParseBytes(sizeS)
			if err != nil {
				return err
			}
			if measure {
				return measureDatagen(w, src, ds, size, seed)
			}
			return toOutput(cmd, out, func(w io.Writer) error {
				_, err := io.Copy(w, src.NewReader(seed, size))
				return err
			})
		},
	}
	cmd.Flags().StringVar(&spec, "data", "realistic:3", "zeros, random, realistic[:RATIO] or mimic:SAMPLE")
	cmd.Flags().StringVar(&sizeS, "size", "64MiB", "bytes to generate")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "content seed")
	cmd.Flags().StringVarP(&out, "output", "o", "", "file to write (default stdout)")
	cmd.Flags().BoolVar(&measure, "measure", false, "report generation speed and achieved gzip/zstd ratios instead of writing")
	cmd.Flags().StringVar(&profile, "profile", "", "print the compressibility profile of this sample file")
	return cmd
}

// toOutput runs write on the file path, or on stdout when path is empty.
func toOutput(cmd *cobra.Command, path string, write func(io.Writer) error) error {
	if path == "" {
		return write(cmd.OutOrStdout())
	}
	return writeFile(path, write)
}

// writeFile creates path and runs write on it; a close error counts.
func writeFile(path string, write func(io.Writer) error) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(fh); err != nil {
		fh.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return fh.Close()
}

func measureDatagen(w io.Writer, src *datagen.Source, spec datagen.Spec, size int64, seed uint64) error {
	buf := make([]byte, min(size, 256<<20))
	start := time.Now()
	var n int64
	for i := uint64(0); n < size || time.Since(start) < time.Second; i++ {
		src.Fill(seed+i, buf)
		n += int64(len(buf))
	}
	el := time.Since(start)
	c, err := datagen.NewCompressors()
	if err != nil {
		return err
	}
	defer c.Close()
	sample := buf[:min(len(buf), 8<<20)]
	gz, zs, _ := c.Both(sample)
	fmt.Fprintf(w, "%s: generated %.0f MB in %s: %.0f MB/s on one goroutine; gzip %.3fx, zstd %.3fx on %d MB\n",
		spec, float64(n)/1e6, el.Round(time.Millisecond), float64(n)/1e6/el.Seconds(), gz, zs, len(sample)>>20)
	return nil
}
