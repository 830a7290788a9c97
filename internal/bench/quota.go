package bench

import (
	"context"
	"io"
	"net/http"
)

// QuotaOverhead measures what a quota costs a write: two facet serve
// processes take turns by batches of sc's PUTs, then GETs, one with a
// quota set on the benchmark's tenant (bytes, objects and uploads, far
// above what the run stores, so that nothing is refused) and one without.
// Both keep usage counters (every write is counted either way); the
// quota adds the limits the counters are checked against.
func QuotaOverhead(ctx context.Context, dir string, sc SpineScenario, rounds int, logw io.Writer) ([]Comparison, []OverheadSummary, error) {
	sides := OnOff{Names: [2]string{"no quota", "quota set"}, Args: func(string) [2][]string { return [2][]string{nil, nil} },
		setup: func(ctx context.Context, which int, g *gateway) error {
			if which == 0 {
				return nil
			}
			return g.setQuota(ctx, `{"bytes": 1099511627776, "objects": 10000000, "uploads": 1000}`)
		}}
	return RunOnOff(ctx, dir, sc, rounds, sides, logw)
}

// setQuota sets the benchmark tenant's quota through the admin API.
func (g *gateway) setQuota(ctx context.Context, body string) error {
	return g.admin(ctx, "set quota", http.MethodPut, "/v1/tenants/bench/quota", "application/json", body)
}
