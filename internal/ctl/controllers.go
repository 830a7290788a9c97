package ctl

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/admin"
)

// Commands for the controllers: automation controllers of dynamic
// policies and global controllers.

func (o *options) controllerCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "controller", Short: "Inspect the controllers that run dynamic policies and global control loops", Args: cobra.NoArgs}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List controllers: kind (automation, global, or external: another process, by its heartbeats), policy, state (running, backoff, disabled), activation, restarts, last evaluation and values",
		Args:  cobra.NoArgs,
		RunE: o.run(func(ctx context.Context, c *client, p *printer, _ []string) error {
			cl, err := c.listControllers(ctx)
			if err != nil {
				return err
			}
			rows := make([][]string, 0, len(cl.Controllers))
			for _, s := range cl.Controllers {
				last := "-"
				switch {
				case s.LastEvaluation != nil:
					last = stamp(*s.LastEvaluation)
				case s.LastSeen != nil: // an external controller's last heartbeat
					last = "seen " + stamp(*s.LastSeen)
				}
				rows = append(rows, []string{s.ID, s.Kind, orDash(s.Policy), s.State, strconv.FormatBool(s.Active),
					strconv.Itoa(s.Restarts), last, controllerValues(s.Values), orDash(oneLine(s.Reason))})
			}
			return p.print(cl, []string{"ID", "KIND", "POLICY", "STATE", "ACTIVE", "RESTARTS", "LAST-EVAL", "VALUES", "REASON"}, rows)
		}),
	})
	return cmd
}

// controllerValues writes "tenant:t1 put_ops=4.2, ...".
func controllerValues(vs []admin.ControllerValue) string {
	if len(vs) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(vs))
	for _, v := range vs {
		parts = append(parts, fmt.Sprintf("%s %s=%s", v.Target, v.Metric, strconv.FormatFloat(v.Value, 'g', 6, 64)))
	}
	return strings.Join(parts, ", ")
}

func (c *client) listControllers(ctx context.Context) (admin.ControllerList, error) {
	var out admin.ControllerList
	err := c.do(ctx, http.MethodGet, "/controllers", nil, &out)
	return out, err
}
