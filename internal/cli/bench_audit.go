package cli

import (
	"context"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/bench"
)

func newBenchAuditCommand() *cobra.Command {
	return newOnOffBenchCommand("audit",
		"The audit log's cost: 4 KiB PUTs (each one an audit line) and GETs (none, the control) through facet serve with --audit-log vs without, in one run",
		`What the audit log costs requests: two facet serve processes, one with --audit-log (a file in the
run's directory) and one without, take turns by batches of 4 KiB PUTs, then GETs; each round starts
a fresh pair. Every PUT is a mutation and writes an audit line; GETs write none and show the noise.

The recorded results: docs/benchmarks/audit.md.`,
		"with --audit-log",
		func(ctx context.Context, dir string, sc bench.SpineScenario, rounds int, logw io.Writer) ([]bench.Comparison, []bench.OverheadSummary, error) {
			sides := bench.OnOff{Names: [2]string{"audit off", "audit on"}, Args: func(dir string) [2][]string {
				return [2][]string{nil, {"--audit-log", filepath.Join(dir, "audit.log")}}
			}}
			return bench.RunOnOff(ctx, dir, sc, rounds, sides, logw)
		})
}
