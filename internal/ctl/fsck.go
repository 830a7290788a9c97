package ctl

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/storage/fs"
)

// fsckCommand is `facet ctl fsck`: the running server's consistency
// check (nothing is repaired online).
func (o *options) fsckCommand() *cobra.Command {
	var verify bool
	cmd := &cobra.Command{
		Use:   "fsck",
		Short: "Check that the running server's object index and data files agree (--verify also reads every file through its checksums); exits 1 on damage",
		Args:  cobra.NoArgs,
		RunE: o.run(func(ctx context.Context, c *client, p *printer, _ []string) error {
			path := "/fsck"
			if verify {
				path += "?verify=true"
			}
			var rep fs.CheckReport
			// A check reads the whole index, and with --verify every
			// byte: no request timeout.
			hc := *c.hc
			hc.Timeout = 0
			cc := *c
			cc.hc = &hc
			if err := cc.do(ctx, http.MethodGet, path, nil, &rep); err != nil {
				return err
			}
			if err := PrintCheckReport(p.out, p.json, rep); err != nil {
				return err
			}
			if rep.Damage > 0 {
				return fmt.Errorf("%d finding(s) of damage", rep.Damage)
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&verify, "verify", false, "also read every data file through its recorded checksums")
	return cmd
}

// PrintCheckReport prints a check's findings as a table, then its counts,
// or the whole report as JSON; facet fsck prints its offline check so too.
func PrintCheckReport(w io.Writer, asJSON bool, rep fs.CheckReport) error {
	p := &printer{out: w, json: asJSON}
	rows := make([][]string, 0, len(rep.Findings))
	for _, f := range rep.Findings {
		what := f.Kind
		if f.Leftover {
			what += " (leftover)"
		}
		if f.Repaired {
			what += " (repaired)"
		}
		loc := f.Bucket + "/" + f.Key
		if f.Upload != "" {
			loc = f.Bucket + " upload " + f.Upload + " part " + strconv.Itoa(f.Part)
		}
		if f.Bucket == "" {
			loc = "-"
		}
		rows = append(rows, []string{what, loc, f.VersionID, f.File, f.Detail})
	}
	if err := p.print(rep, []string{"FINDING", "WHERE", "VERSION", "FILE", "DETAIL"}, rows); err != nil {
		return err
	}
	if asJSON {
		return nil
	}
	_, err := fmt.Fprintf(w, "%d objects, %d versions, %d delete markers, %d uploads with %d parts; %d files (%d bytes), %d verified, %d without checksums; %d finding(s), %d of damage\n",
		rep.Objects, rep.Versions, rep.Markers, rep.Uploads, rep.Parts, rep.Files, rep.Bytes, rep.Verified, rep.Unverified, len(rep.Findings), rep.Damage)
	return err
}
