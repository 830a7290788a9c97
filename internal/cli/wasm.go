package cli

import (
	"strconv"

	"github.com/spf13/pflag"

	"github.com/facet-sds/facet/internal/filter/wasm"
)

// bytesFlag is a size flag ("512MiB", or a byte count).
type bytesFlag struct{ v *int64 }

func (b bytesFlag) String() string {
	switch {
	case b.v == nil:
		return ""
	case *b.v%(1<<30) == 0 && *b.v > 0:
		return strconv.FormatInt(*b.v>>30, 10) + "GiB"
	case *b.v%(1<<20) == 0 && *b.v > 0:
		return strconv.FormatInt(*b.v>>20, 10) + "MiB"
	}
	return strconv.FormatInt(*b.v, 10)
}

func (b bytesFlag) Set(s string) error {
	n, err := parseSizeFlag(s)
	if err != nil {
		return err
	}
	*b.v = n
	return nil
}

func (bytesFlag) Type() string { return "size" }

// wasmBudgetFlags bound the node's WASM filter instances (docs/filters.md,
// "The node's budget").
func wasmBudgetFlags(f *pflag.FlagSet, b *wasm.BudgetConfig) {
	b.Instances, b.Memory, b.Wait, b.Queue = wasm.DefaultInstances(), wasm.DefaultBudgetMemory, wasm.DefaultBudgetWait, wasm.DefaultBudgetQueue
	f.IntVar(&b.Instances, "wasm-max-instances", b.Instances, "WASM filter instances running at once on this node, shared fairly between tenants "+
		"(default GOMAXPROCS-1, at least 1: spinning filters leave a core to every other request; 0: no node budget)")
	f.Var(bytesFlag{&b.Memory}, "wasm-memory-budget", "sum of the WASM instances' memory caps (128 MiB each) running at once on this node")
	f.DurationVar(&b.Wait, "wasm-queue-timeout", b.Wait, "how long a request waits for a WASM instance slot before 503 SlowDown")
	f.IntVar(&b.Queue, "wasm-queue", b.Queue, "requests of one tenant that may wait for a WASM instance slot; more get 503 SlowDown at once")
}
