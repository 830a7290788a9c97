package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/admin"
)

func (c *client) auditTail(ctx context.Context, n int, offset int64) (admin.AuditTail, error) {
	var out admin.AuditTail
	q := "?n=" + strconv.Itoa(n)
	if offset >= 0 {
		q = "?offset=" + strconv.FormatInt(offset, 10)
	}
	err := c.do(ctx, http.MethodGet, "/audit"+q, nil, &out)
	return out, err
}

// auditCommand reads the server's audit log through GET /v1/audit (the
// admin token only).
func (o *options) auditCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "Read the server's audit log (--audit-log)", Args: cobra.NoArgs}
	var (
		n      int
		follow bool
		every  time.Duration
	)
	tail := &cobra.Command{
		Use:   "tail",
		Short: "Print the last lines of the audit log, one JSON object a line; --follow keeps printing new ones",
		Args:  cobra.NoArgs,
		RunE: o.run(func(ctx context.Context, c *client, p *printer, _ []string) error {
			t, err := c.auditTail(ctx, n, -1)
			if err != nil {
				return err
			}
			for {
				for _, l := range t.Lines {
					// One line each, as the file has them (the API's
					// answer is indented).
					var b bytes.Buffer
					if err := json.Compact(&b, l); err != nil {
						return err
					}
					b.WriteByte('\n')
					if _, err := p.out.Write(b.Bytes()); err != nil {
						return err
					}
				}
				if !follow {
					return nil
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(every):
				}
				if t, err = c.auditTail(ctx, 0, t.Next); err != nil {
					if ctx.Err() != nil {
						return nil // interrupted while asking: the normal end of --follow
					}
					return err
				}
			}
		}),
	}
	tail.Flags().IntVarP(&n, "lines", "n", 20, "how many of the last lines to print")
	tail.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing lines as they are written (until interrupted)")
	tail.Flags().DurationVar(&every, "every", time.Second, "with --follow: how often to ask for new lines")
	cmd.AddCommand(tail)
	return cmd
}
