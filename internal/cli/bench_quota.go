package cli

import (
	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/bench"
)

func newBenchQuotaCommand() *cobra.Command {
	return newOnOffBenchCommand("quota",
		"A quota's cost: 4 KiB PUTs (each one charged against the tenant's limits) and GETs (the control) through facet serve with a quota set vs none, in one run",
		`What a quota costs requests: two facet serve processes, one whose benchmark tenant has a quota
(bytes, objects, uploads; far above what the run stores) and one without, take turns by batches of
4 KiB PUTs, then GETs; each round starts a fresh pair. Both count usage (every write is charged to
the counters either way); the quota adds the limits the charges are checked against. GETs are not
charged and show the noise.

The recorded results: docs/benchmarks/quota.md.`,
		"with a quota on the tenant",
		bench.QuotaOverhead)
}
