package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/bench"
)

func newBenchWasmCommand() *cobra.Command {
	var quick, budget bool
	var modules string
	cmd := &cobra.Command{
		Use:   "wasm",
		Short: "What WASM filters cost: 1 MiB PUT/GET with no filter, a built-in no-op filter, and 1, 2 or 4 WASM no-op filters (Go and Rust); module start-up; a WASM filter vs the same one built in",
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := os.MkdirTemp("", "facet-bench-*")
			if err != nil {
				return err
			}
			defer os.RemoveAll(d)
			ops := 200
			if quick {
				ops = 10
			}
			o := bench.WasmOptions{Modules: modules, Ops: ops, Out: cmd.OutOrStdout(), Log: cmd.ErrOrStderr()}
			if budget {
				return bench.RunWasmBudget(cmd.Context(), o)
			}
			return bench.RunWasm(cmd.Context(), d, o)
		},
	}
	cmd.Flags().BoolVar(&quick, "quick", false, "small run, for smoke tests")
	cmd.Flags().BoolVar(&budget, "budget", false, "only what the node's WASM budget (admission, CPU accounting) adds to an uncontended instance, in process")
	cmd.Flags().StringVar(&modules, "modules", "bin/wasm", "directory of the built example modules (make wasm-examples)")
	return cmd
}
