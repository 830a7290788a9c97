package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/bench"
)

func newBenchStreamsCommand() *cobra.Command {
	var o bench.StreamsOptions
	var conc, jsonOut string
	var sizeMiB int64
	cmd := &cobra.Command{
		Use:   "streams",
		Short: "Many large GETs at once from one disk: a thread per stream vs a shared pool of threads (bandwidth per stream, how evenly it is shared), and what classifying requests costs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, f := range strings.Split(conc, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || n < 1 {
					return fmt.Errorf("--concurrency %q: want a list of positive integers", conc)
				}
				o.Concurrency = append(o.Concurrency, n)
			}
			o.Size = sizeMiB << 20
			if o.Dir == "" {
				// Under the working directory: /tmp may be a tmpfs, and
				// this benchmark is about a disk.
				d, err := os.MkdirTemp(".", "facet-bench-streams-*")
				if err != nil {
					return err
				}
				defer os.RemoveAll(d)
				o.Dir = d
			}
			start := time.Now()
			rows, err := bench.RunStreams(cmd.Context(), o, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "\nfacet bench streams (%s, %s; %d MiB objects, cache: %s)\n\n", time.Now().UTC().Format(time.RFC3339),
				time.Since(start).Round(time.Second), sizeMiB, rows[0].CacheMethod)
			bench.WriteStreamsTable(out, rows)
			h, r := bench.ClassifyCost(1_000_000)
			fmt.Fprintf(out, "\nclassification per request (CPU time): header parse + classify %.0f ns, rules only (9 rules, last matches) %.0f ns (goal <= 1000 ns; PAIO: 54 ns)\n", h, r)
			if jsonOut != "" {
				b, _ := json.MarshalIndent(rows, "", "  ")
				return os.WriteFile(jsonOut, b, 0o644)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Dir, "dir", "", "directory for the objects, on the disk to measure (default: a temporary one under the working directory)")
	f.Int64Var(&sizeMiB, "size-mib", 256, "object size in MiB")
	f.StringVar(&conc, "concurrency", "2,4,8,16,32", "numbers of concurrent streams")
	f.IntVar(&o.PoolThreads, "pool-threads", 8, "threads of the round-robin pool")
	f.BoolVar(&o.DropCaches, "drop-caches", false, "also drop the whole page cache (/proc/sys/vm/drop_caches, root) before each run; by default only the benchmark's files are evicted")
	f.IntVar(&o.ChunkSize, "chunk", 0, "read size in bytes, both models (default 1 MiB)")
	f.IntVar(&o.ReadAhead, "read-ahead", 0, "chunks a stream may hold read ahead, both models (default 4)")
	f.IntVar(&o.Reps, "reps", 3, "runs of each model at each concurrency, in ABBA order; the median run is reported")
	f.StringVar(&jsonOut, "json", "", "also write the rows (per-stream bandwidths included) to this file")
	return cmd
}
