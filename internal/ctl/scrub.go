package ctl

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/admin"
)

// Commands for the integrity scrubber: read stored objects through their
// checksums and report the damaged, missing and unverified ones.

func (o *options) scrubCommand() *cobra.Command {
	var tenant, bucket string
	var wait bool
	cmd := &cobra.Command{
		Use: "scrub",
		Short: "Check stored objects against their checksums in the background (every object, a tenant's or a bucket's) " +
			"and report the damaged, missing and unverified ones; --wait waits for the report",
		Args: cobra.NoArgs,
		RunE: o.run(func(ctx context.Context, c *client, p *printer, _ []string) error {
			q := url.Values{}
			if tenant != "" {
				q.Set("tenant", tenant)
			}
			if bucket != "" {
				q.Set("bucket", bucket)
			}
			path := "/scrub"
			if len(q) > 0 {
				path += "?" + q.Encode()
			}
			var rep admin.ScrubReport
			if err := c.do(ctx, http.MethodPost, path, nil, &rep); err != nil {
				return err
			}
			for wait && rep.State == "running" {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(200 * time.Millisecond):
				}
				if err := c.do(ctx, http.MethodGet, "/scrub", nil, &rep); err != nil {
					return err
				}
			}
			return printScrub(p, rep)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&tenant, "tenant", "", "scrub this tenant's buckets only")
	f.StringVar(&bucket, "bucket", "", "scrub this bucket only")
	f.BoolVar(&wait, "wait", false, "wait for the run to finish and print its report")
	cmd.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "The current or last scrub's report on this node",
		Args:  cobra.NoArgs,
		RunE: o.run(func(ctx context.Context, c *client, p *printer, _ []string) error {
			var rep admin.ScrubReport
			if err := c.do(ctx, http.MethodGet, "/scrub", nil, &rep); err != nil {
				return err
			}
			return printScrub(p, rep)
		}),
	})
	return cmd
}

// printScrub prints a report: its totals, then one line per finding.
func printScrub(p *printer, rep admin.ScrubReport) error {
	if p.json {
		return p.writeJSON(rep)
	}
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	fmt.Fprintf(p.out, "%s %s: %s objects (%s bytes): %s ok, %s damaged, %s missing, %s unverified%s\n", rep.ID, rep.State,
		n(rep.Objects), n(rep.Bytes), n(rep.OK), n(rep.Damaged), n(rep.Missing), n(rep.Unverified), errSuffix(rep.Error))
	if len(rep.Findings) == 0 {
		return nil
	}
	rows := make([][]string, 0, len(rep.Findings))
	for _, f := range rep.Findings {
		rows = append(rows, []string{f.Result, f.Tenant, f.Bucket, f.Key, f.Detail})
	}
	return p.print(rep, []string{"RESULT", "TENANT", "BUCKET", "KEY", "DETAIL"}, rows)
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return " (" + e + ")"
}
