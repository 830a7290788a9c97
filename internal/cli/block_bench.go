package cli

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/bench"
)

func newBenchNBDCommand() *cobra.Command {
	var o bench.NBDOptions
	var size, cpuProfile string
	cmd := &cobra.Command{
		Use:   "nbd",
		Short: "Block storage: fio through Facet's NBD server vs a plain one (nbdkit), how well per-volume limits hold with 4 busy volumes, and what block filters and TLS cost",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Dir == "" {
				d, err := os.MkdirTemp("", "facet-bench-nbd-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(d)
				o.Dir = d
			}
			n, err := parseSizeFlag(size)
			if err != nil {
				return err
			}
			o.Size, o.Out, o.Log = n, cmd.OutOrStdout(), cmd.ErrOrStderr()
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			return bench.RunNBD(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Dir, "dir", "", "scratch directory on the disk to measure (default: a temporary directory)")
	f.DurationVar(&o.Runtime, "runtime", 8*time.Second, "fio runtime per job")
	f.StringVar(&size, "size", "512MiB", "bytes per volume")
	f.IntVar(&o.Slots, "slots", 0, "I/Os a pool runs at once before its fair-share queue orders the rest (0: the server's default)")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the block stage (it runs in this process) to this file")
	f.IntVar(&o.Rounds, "rounds", 3, "rounds per workload, alternating the servers (medians reported)")
	f.StringSliceVar(&o.Workloads, "workload", nil, "with vs-nbdkit: only these fio modes (randread, randwrite, read, write)")
	f.StringVar(&o.Only, "only", "", "run one part: vs-nbdkit, throttle, filters or tls")
	return cmd
}

// parseSizeFlag reads 512MiB, 1GiB or a byte count.
func parseSizeFlag(s string) (int64, error) {
	mult := int64(1)
	for suffix, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if len(s) > len(suffix) && s[len(s)-len(suffix):] == suffix {
			s, mult = s[:len(s)-len(suffix)], m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("size %q: want a positive number of bytes, KiB, MiB or GiB", s)
	}
	return n * mult, nil
}
