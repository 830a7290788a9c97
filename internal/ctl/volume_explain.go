package ctl

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/block"
)

func (o *options) volumeExplainCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "explain NAME",
		Short: "Show which block filters (in write order) and throttles apply to a volume, and which policy or API call each comes from",
		Args:  cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			var ex block.VolumeExplanation
			if err := c.do(ctx, http.MethodGet, "/volumes/"+seg(args[0])+"/explain", nil, &ex); err != nil {
				return err
			}
			return p.print(ex, []string{"WHAT", "NAME", "SETTING", "FROM"}, volumeExplainRows(ex))
		}),
	}
}

func volumeExplainRows(ex block.VolumeExplanation) [][]string {
	var rows [][]string
	for i, s := range ex.Filters {
		rows = append(rows, []string{fmt.Sprintf("filter %d", i+1), s.Filter, orDash(paramText(s.Params)), policyText(s.Policy, s.PolicyName, s.Line, s.Target, s.Dynamic)})
	}
	for _, t := range ex.Throttles {
		limit, from := "none", "-"
		if t.Limit > 0 {
			limit = throttleLimit(t.Throttle, t.Limit)
		}
		switch t.Source {
		case block.SourceAPI:
			from = "API (PUT /volumes/" + ex.Volume + "/throttle)"
			if t.Policy != "" && t.Overridden > 0 {
				from += fmt.Sprintf(", in place of %s from %s", throttleLimit(t.Throttle, t.Overridden), policyText(t.Policy, t.PolicyName, t.Line, t.Target, t.Dynamic))
			}
		case block.SourcePolicy:
			from = policyText(t.Policy, t.PolicyName, t.Line, t.Target, t.Dynamic)
		}
		if t.Unused > 0 {
			unused := fmt.Sprintf("%d operations", t.Unused)
			if strings.HasSuffix(t.Throttle, "_bw") {
				unused = size(t.Unused)
			}
			limit += " (" + unused + " allowed and not taken since opened)"
		}
		rows = append(rows, []string{"throttle", t.Throttle, limit, from})
	}
	for _, pp := range ex.Pending {
		rows = append(rows, []string{"pending", pp.Policy, "WHEN " + pp.Trigger + " DO " + strings.Join(pp.Actions, ", "), "dynamic policy, trigger does not hold now"})
	}
	if ex.Open {
		rows = append(rows, []string{"running", strings.Join(ex.Running, ","), "", "the open volume's connections"})
	}
	var applied []string
	for _, a := range ex.Applied {
		applied = append(applied, a.Filter)
	}
	if !ex.AppliedSince.IsZero() {
		rows = append(rows, []string{"applied", orDash(strings.Join(applied, ",")), "since " + ex.AppliedSince.Format("2006-01-02 15:04:05Z"), "recorded in the volume's metadata"})
	}
	for _, n := range ex.Notes {
		rows = append(rows, []string{"note", "", n, ""})
	}
	return rows
}

func policyText(id, name string, line int, target string, dynamic bool) string {
	s := "policy " + id
	if name != "" && name != id {
		s += " (" + name + ")"
	}
	s += fmt.Sprintf(", line %d, %s", line, target)
	if dynamic {
		s += ", dynamic: its trigger holds"
	}
	return s
}

func paramText(p map[string]string) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(p)) {
		kv = append(kv, k+"="+p[k])
	}
	return strings.Join(kv, ",")
}

func throttleLimit(name string, n int64) string {
	if strings.HasSuffix(name, "_bw") {
		return rate(n)
	}
	return fmt.Sprintf("%d IO/s", n)
}
