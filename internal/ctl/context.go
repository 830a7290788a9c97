package ctl

import (
	"context"
	"net/http"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/flowctx"
)

// Commands for request classes: tenants' context rules and the class
// flows a gateway enforces.

func (o *options) contextCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "context", Short: "Request classes: tenants' context rules and the tenant x class flows", Args: cobra.NoArgs}
	rules := &cobra.Command{Use: "rules", Short: "A tenant's context rules (key prefix, user agent or metadata -> class)", Args: cobra.NoArgs}
	src := &policySource{}
	set := &cobra.Command{
		Use:   "set TENANT [RULES-JSON]",
		Short: `Replace a tenant's rules: '{"default":"fg","rules":[{"prefix":"logs/","class":"batch"}]}' or -f FILE`,
		Args:  cobra.RangeArgs(1, 2),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			text, _, err := src.read(p.cmd, args[1:])
			if err != nil {
				return err
			}
			rules, err := flowctx.ParseRules([]byte(text))
			if err != nil {
				// Checked here too, so that a typo is reported before any
				// request, with the same words as the server's.
				return err
			}
			var out flowctx.Rules
			if err := c.do(ctx, http.MethodPut, "/tenants/"+seg(args[0])+"/context-rules", rules, &out); err != nil {
				return err
			}
			return p.print(out, []string{"#", "PREFIX", "USER-AGENT", "META", "CLASS"}, ruleRows(out))
		}),
	}
	src.addFlag(set)
	rules.AddCommand(&cobra.Command{
		Use:   "get TENANT",
		Short: "Show a tenant's rules",
		Args:  cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			var out flowctx.Rules
			if err := c.do(ctx, http.MethodGet, "/tenants/"+seg(args[0])+"/context-rules", nil, &out); err != nil {
				return err
			}
			return p.print(out, []string{"#", "PREFIX", "USER-AGENT", "META", "CLASS"}, ruleRows(out))
		}),
	}, set, &cobra.Command{
		Use:   "delete TENANT",
		Short: "Remove a tenant's rules (its requests without a class go to class default)",
		Args:  cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			if err := c.do(ctx, http.MethodDelete, "/tenants/"+seg(args[0])+"/context-rules", nil, nil); err != nil {
				return err
			}
			return p.done(map[string]string{"tenant": args[0], "status": "deleted"}, "context rules of "+args[0]+" deleted")
		}),
	})
	cmd.AddCommand(rules, &cobra.Command{
		Use:   "flows",
		Short: "The tenant x class flows: rate in force, measured bandwidth, bytes, requests",
		Args:  cobra.NoArgs,
		RunE: o.run(func(ctx context.Context, c *client, p *printer, _ []string) error {
			var out admin.ContextFlows
			if err := c.do(ctx, http.MethodGet, "/context/flows", nil, &out); err != nil {
				return err
			}
			rows := make([][]string, 0, len(out.Flows))
			for _, f := range out.Flows {
				rate := "unlimited"
				if !f.Unlimited {
					rate = rateText(f.Rate)
				}
				rows = append(rows, []string{f.Tenant, f.Class, rate, rateText(f.Measured), strconv.FormatInt(f.Served, 10), strconv.FormatInt(f.Requests, 10)})
			}
			return p.print(out, []string{"TENANT", "CLASS", "RATE", "MEASURED", "BYTES", "REQUESTS"}, rows)
		}),
	})
	return cmd
}

func ruleRows(r flowctx.Rules) [][]string {
	rows := make([][]string, 0, len(r.Rules)+1)
	for i, x := range r.Rules {
		rows = append(rows, []string{strconv.Itoa(i + 1), orDash(x.Prefix), orDash(x.UserAgent), orDash(x.Meta), x.Class})
	}
	def := r.Default
	if def == "" {
		def = flowctx.DefaultClass
	}
	return append(rows, []string{"default", "-", "-", "-", def})
}

func rateText(bps float64) string {
	return strconv.FormatFloat(bps/1e6, 'f', 2, 64) + " MB/s"
}
