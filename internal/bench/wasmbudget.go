package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/filter/wasm"
)

// RunWasmBudget measures what the node's WASM budget adds to an
// uncontended instance: the same noop module started through a runtime
// without a budget and through one with the server's defaults (slot,
// memory reservation, the request's scope, per-tenant outcome and CPU
// accounting, which wires the instance to its thread), alternately, in
// process. It reports p50 wall time and CPU time per start and their
// ratios.
func RunWasmBudget(ctx context.Context, opts WasmOptions) error {
	noop, err := os.ReadFile(filepath.Join(opts.Modules, "noop.wasm"))
	if err != nil {
		return fmt.Errorf("%w (build the examples: make wasm-examples)", err)
	}
	plain, err := wasm.NewRuntime(ctx, wasm.Config{})
	if err != nil {
		return err
	}
	defer plain.Close(ctx)
	budgeted, err := wasm.NewRuntime(ctx, wasm.Config{
		Budget:  wasm.BudgetConfig{Instances: wasm.DefaultInstances()},
		OnAdmit: func(string, string) {},
		OnCPU:   func(string, string, time.Duration) {},
	})
	if err != nil {
		return err
	}
	defer budgeted.Close(ctx)
	fs := [2]filter.Transformer{}
	for i, rt := range []*wasm.Runtime{plain, budgeted} {
		if fs[i], err = wasmTransformer(ctx, rt, "noop", noop, nil); err != nil {
			return err
		}
	}
	const size = 64 << 10
	payload := textLike(size)
	req := &filter.Request{Tenant: "bench", Size: size, Method: filter.MethodPut}
	var wall [2][]time.Duration
	var cpu [2]time.Duration
	n := opts.Ops * 2
	fmt.Fprintf(opts.Log, "%d starts of the noop module (64 KiB through it) per runtime, alternating ...\n", n)
	for i := range n + 10 {
		for k, f := range fs {
			c0, t0 := cpuNow(), time.Now()
			out, err := f.Transform(filter.WithScope(ctx), req, bytes.NewReader(payload))
			if err == nil {
				_, err = io.Copy(io.Discard, out)
			}
			if err != nil {
				return err
			}
			if i >= 10 { // warm-up
				wall[k] = append(wall[k], time.Since(t0))
				cpu[k] += cpuNow() - c0
			}
		}
	}
	w := opts.Out
	fmt.Fprintf(w, "facet bench wasm --budget (%s): an uncontended WASM noop (64 KiB), in process, %d starts each, alternating\n\n",
		time.Now().UTC().Format(time.RFC3339), n)
	fmt.Fprintln(w, "| runtime | p50 ms | CPU ms per start |")
	fmt.Fprintln(w, "|---|---:|---:|")
	p50 := [2]time.Duration{durPct(wall[0], 0.5), durPct(wall[1], 0.5)}
	per := [2]time.Duration{cpu[0] / time.Duration(n), cpu[1] / time.Duration(n)}
	fmt.Fprintf(w, "| no budget | %.3f | %.3f |\n", msOf(p50[0]), msOf(per[0]))
	fmt.Fprintf(w, "| node budget (%d instances), CPU charged per tenant | %.3f | %.3f |\n", wasm.DefaultInstances(), msOf(p50[1]), msOf(per[1]))
	fmt.Fprintf(w, "\nWith the budget vs without: p50 %.3fx, CPU %.3fx.\n", float64(p50[1])/float64(p50[0]), float64(per[1])/float64(per[0]))
	return nil
}
