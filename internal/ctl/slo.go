package ctl

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/admin"
)

// Commands for SLOs (/slos) and the bandwidth views (/bw).

func (o *options) sloCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "slo", Short: "Set, show, list and delete tenants' (and their request classes') bandwidth and ops SLOs", Args: cobra.NoArgs}
	spec := map[string]*string{}
	var setClass, getClass, delClass string
	set := &cobra.Command{
		Use: "set TENANT",
		Short: "Set a tenant's SLO record, or with --class its request class's (it takes precedence over policies' SET bandwidth " +
			"for that tenant, or over CONTEXT policies for that class)",
		Example: "  facet ctl slo set t1 --get 30MB/s --put 10MB/s --limit 200MB/s --weight 2\n" +
			"  facet ctl slo set t2 --reservation 20MB/s --ops 100 --background 5MB/s\n" +
			"  facet ctl slo set t1 --class compaction --reservation 5MB/s --limit 20MB/s",
		Args: cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			body := admin.SLOSpec{}
			for k, v := range spec {
				if *v != "" {
					body[k] = *v
				}
			}
			if len(body) == 0 {
				return fmt.Errorf("slo set: give at least one of --get, --put, --reservation, --limit, --weight, --ops, --background")
			}
			var out admin.SLO
			if err := c.do(ctx, http.MethodPut, sloPath(args[0], setClass), body, &out); err != nil {
				return err
			}
			return p.print(out, sloHeader, [][]string{sloRow(out)})
		}),
	}
	for _, f := range []struct{ name, help string }{
		{"get", "GET reservation (30MB/s)"}, {"put", "PUT reservation"}, {"reservation", "reservation of the classes --get/--put leave unset"},
		{"limit", "cap of each class, fleet-wide"}, {"weight", "share of the spare bandwidth (default 1)"},
		{"ops", "operations per second of each class, fleet-wide: the bandwidth controller splits it over the gateways (over it: a short queue, then 503 SlowDown)"}, {"background", "cap of the tenant's background work"},
	} {
		spec[f.name] = set.Flags().String(f.name, "", f.help)
	}
	set.Flags().StringVar(&setClass, "class", "", "the tenant's request class (x-facet-context class=...) the SLO governs, instead of the tenant "+
		"(then --reservation, --limit, --weight, --ops: a class's bytes are one flow, without --get/--put or --background)")
	get := &cobra.Command{
		Use:   "get TENANT",
		Short: "Show a tenant's effective SLO, or with --class its class's, and where it comes from",
		Args:  cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			var out admin.SLO
			if err := c.do(ctx, http.MethodGet, sloPath(args[0], getClass), nil, &out); err != nil {
				return err
			}
			return p.print(out, sloHeader, [][]string{sloRow(out)})
		}),
	}
	get.Flags().StringVar(&getClass, "class", "", "the tenant's request class")
	del := &cobra.Command{
		Use:     "delete TENANT",
		Aliases: []string{"unset"},
		Short:   "Delete a tenant's SLO record, or with --class its class's (policies' SLOs stay)",
		Args:    cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			if err := c.do(ctx, http.MethodDelete, sloPath(args[0], delClass), nil, nil); err != nil {
				return err
			}
			who := args[0]
			if delClass != "" {
				who += " CONTEXT " + delClass
			}
			return p.print(map[string]string{"deleted": args[0], "class": delClass}, []string{"DELETED"}, [][]string{{who}})
		}),
	}
	del.Flags().StringVar(&delClass, "class", "", "the tenant's request class")
	cmd.AddCommand(set, get, &cobra.Command{
		Use:   "list",
		Short: "List SLOs: API records and those policies set",
		Args:  cobra.NoArgs,
		RunE: o.run(func(ctx context.Context, c *client, p *printer, _ []string) error {
			var out admin.SLOList
			if err := c.do(ctx, http.MethodGet, "/slos", nil, &out); err != nil {
				return err
			}
			rows := make([][]string, 0, len(out.SLOs))
			for _, s := range out.SLOs {
				rows = append(rows, sloRow(s))
			}
			return p.print(out, sloHeader, rows)
		}),
	}, del)
	return cmd
}

// sloPath is the API path of tenant's SLO, or of its class's.
func sloPath(tenant, class string) string {
	p := "/slos/" + seg(tenant)
	if class != "" {
		p += "?class=" + url.QueryEscape(class)
	}
	return p
}

var sloHeader = []string{"TENANT", "SOURCE", "GET", "PUT", "RESERVATION", "LIMIT", "WEIGHT", "OPS", "BACKGROUND"}

func sloRow(s admin.SLO) []string {
	src := s.Source
	if s.Policy != "" {
		src += " " + s.Policy
	}
	w := "-"
	if s.Weight > 0 {
		w = strconv.FormatFloat(s.Weight, 'f', -1, 64)
	}
	ops := "-"
	if s.Ops > 0 {
		ops = strconv.FormatFloat(s.Ops, 'f', -1, 64) + "/s"
	}
	who := s.Tenant
	if s.Class != "" {
		who += " CONTEXT " + s.Class
	}
	return []string{who, src, mbps(s.Get), mbps(s.Put), mbps(s.Reservation), mbps(s.Limit), w, ops, mbps(s.Background)}
}

// mbps shows bytes/s in MB/s; "-" for none.
func mbps(v float64) string {
	if v <= 0 {
		return "-"
	}
	return strconv.FormatFloat(v/1e6, 'f', 2, 64) + "MB/s"
}

// opsCap renders a flow's operations cap and where it comes from:
// "20/s static", "-" without one.
func opsCap(f admin.BWFlow) string {
	if f.OpsRate <= 0 {
		return "-"
	}
	return perSec(f.OpsRate) + "/s " + orDash(f.OpsSource)
}

func perSec(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func (o *options) bwCommand() *cobra.Command {
	var node string
	var osinfo bool
	cmd := &cobra.Command{
		Use:   "bw",
		Short: "Bandwidth per node and flow: rate asked (assigned or static) vs served, streams, time waited; operations cap, admitted, queued and refused (SlowDown)",
		Args:  cobra.NoArgs,
		RunE: o.run(func(ctx context.Context, c *client, p *printer, _ []string) error {
			path := "/bw"
			if osinfo {
				path = "/bw/osinfo"
			}
			var v admin.BWView
			if err := c.do(ctx, http.MethodGet, path, nil, &v); err != nil {
				return err
			}
			var rows [][]string
			if osinfo {
				for _, n := range v.Nodes {
					if node == "" || n.Node == node {
						asked := mbps(n.Asked)
						if n.Asked == 0 && n.Streams > 0 {
							asked = "unlimited"
						}
						rows = append(rows, []string{n.Node, n.Device, mbps(n.Capacity), asked, mbps(n.Served), strconv.Itoa(n.Streams), orDash(n.Assigner)})
						// The node's devices: what each moved, and its
						// per-stream threads' needs.
						for _, d := range n.Devices {
							served := mbps(d.Served)
							if d.Served < 0 {
								served = "unknown"
							}
							rows = append(rows, []string{n.Node, d.Device, "-", mbps(d.Asked), served, strconv.Itoa(len(d.Streams)), "-"})
						}
					}
				}
				return p.print(v, []string{"NODE", "DEVICE", "CAPACITY", "ASKED", "SERVED", "STREAMS", "ASSIGNER"}, rows)
			}
			for _, n := range v.Nodes {
				if node != "" && n.Node != node {
					continue
				}
				for _, f := range n.Flows {
					asked := mbps(f.Asked)
					if f.Asked == 0 {
						asked = "unlimited"
					}
					rows = append(rows, []string{n.Node, f.Tenant, f.Class, asked, f.Source, mbps(f.Served), strconv.Itoa(f.Streams),
						strconv.FormatFloat(f.Waited, 'f', 2, 64), opsCap(f), perSec(f.Ops), perSec(f.Queued), perSec(f.Rejected)})
				}
			}
			return p.print(v, []string{"NODE", "TENANT", "CLASS", "ASKED", "SOURCE", "SERVED", "STREAMS", "WAITED-S", "OPS-CAP", "OPS/S", "QUEUED/S", "SLOWDOWN/S"}, rows)
		}),
	}
	cmd.Flags().StringVar(&node, "node", "", "only this node")
	cmd.Flags().BoolVar(&osinfo, "osinfo", false, "one line per node (capacity, asked vs served, active streams), then one per device of its data (asked: the per-stream threads' needs; served: what the device moved; streams)")
	return cmd
}
