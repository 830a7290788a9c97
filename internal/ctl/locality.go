package ctl

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/sysdev"
)

// Commands for the data locality service and the node report.

func (o *options) localityCommand() *cobra.Command {
	var tenant, volume string
	cmd := &cobra.Command{
		Use:   "locality BUCKET KEY | locality --volume NAME",
		Short: "Tell where an object's or a volume's bytes are: node, device and path, the remote store's endpoint and what it tells, or a volume's stripe layout",
		Args: func(cmd *cobra.Command, args []string) error {
			if volume != "" {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(2)(cmd, args)
		},
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			if volume != "" {
				var vl admin.VolumeLocality
				if err := c.do(ctx, http.MethodGet, "/volumes/"+seg(volume)+"/locality", nil, &vl); err != nil {
					return err
				}
				return p.print(vl, []string{"MEMBER", "POOL", "PATH", "CAPACITY", "DEVICE", "SCHEDULER"}, volumeRows(vl))
			}
			l, err := c.locality(ctx, args[0], args[1], tenant)
			if err != nil {
				return err
			}
			return p.print(l, []string{"FIELD", "VALUE"}, localityRows(l))
		}),
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "answer only if the bucket belongs to this tenant")
	cmd.Flags().StringVar(&volume, "volume", "", "a block volume instead of an object")
	return cmd
}

// volumeRows lists a volume's stripe members, the stripe unit in the
// first row's member column ("0/1MiB").
func volumeRows(vl admin.VolumeLocality) [][]string {
	rows := make([][]string, 0, len(vl.Members))
	for _, m := range vl.Members {
		dev, sched := "-", "-"
		if m.FS != nil && m.FS.Device != nil {
			dev, sched = m.FS.Device.Name, m.FS.Device.Scheduler
		}
		path := m.Path
		if !m.Exists {
			path += " (not created yet)"
		}
		rows = append(rows, []string{fmt.Sprintf("%d/%d (unit %d)", m.Index, vl.Width, vl.StripeUnit), m.Pool, path, strconv.FormatInt(m.Capacity, 10), dev, sched})
	}
	return rows
}

func localityRows(l admin.Locality) [][]string {
	rows := [][]string{{"bucket", l.Bucket}, {"key", l.Key}, {"tenant", l.Tenant}, {"node", l.Node},
		{"kind", l.Kind}, {"stored_size", strconv.FormatInt(l.StoredSize, 10)}}
	if f := l.FS; f != nil {
		rows = append(rows, []string{"path", f.Path}, []string{"mount", f.Mount.Point + " (" + f.Mount.FSType + " on " + f.Mount.Source + ")"})
		rows = append(rows, deviceRows(f)...)
	}
	if r := l.Remote; r != nil {
		rows = append(rows, []string{"endpoint", r.Endpoint}, []string{"backend_bucket", r.Bucket}, []string{"backend_key", r.Key},
			[]string{"etag", orDash(r.ETag)}, []string{"storage_class", orDash(r.StorageClass)},
			[]string{"replication_status", orDash(r.ReplicationStatus)}, []string{"server", orDash(r.Server)})
	}
	return rows
}

func deviceRows(p *sysdev.Placement) [][]string {
	d := p.Device
	if d == nil {
		return [][]string{{"device", "-"}, {"note", p.Note}}
	}
	name := d.Name
	if d.Partition != "" {
		name += " (partition " + d.Partition + ")"
	}
	return [][]string{{"device", name + " " + d.MajorMinor}, {"device_type", orDash(d.Type)},
		{"scheduler", d.Scheduler}, {"io_priorities", fmt.Sprintf("%t: %s", d.Priorities, d.PrioritiesNote)}}
}

func (o *options) nodeCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "node", Short: "Inspect the gateway nodes", Args: cobra.NoArgs}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List nodes: backend, GET I/O model, devices (type, scheduler) and whether I/O priorities work there",
		Args:  cobra.NoArgs,
		RunE: o.run(func(ctx context.Context, c *client, p *printer, _ []string) error {
			var nl admin.NodeList
			if err := c.do(ctx, http.MethodGet, "/nodes", nil, &nl); err != nil {
				return err
			}
			var rows [][]string
			for _, n := range nl.Nodes {
				model := "-"
				if n.IO != nil {
					model = n.IO.Model
				}
				if len(n.Devices) == 0 {
					rows = append(rows, []string{n.Name, n.Backend, model, "-", "-", "-", "-", orDash(n.Note)})
				}
				for _, d := range n.Devices {
					row := []string{n.Name, n.Backend, model, d.Mount.Point, "-", "-", "-", d.Note}
					if dv := d.Device; dv != nil {
						row[4], row[5], row[6], row[7] = dv.Name, orDash(dv.Type), dv.Scheduler, dv.PrioritiesNote
					}
					rows = append(rows, row)
				}
			}
			return p.print(nl, []string{"NODE", "BACKEND", "IO-MODEL", "MOUNT", "DEVICE", "TYPE", "SCHEDULER", "PRIORITIES"}, rows)
		}),
	})
	return cmd
}

func (c *client) locality(ctx context.Context, bucket, key, tenant string) (admin.Locality, error) {
	// The key travels as a query parameter: a path would be cleaned of
	// "//" and dot segments.
	q := url.Values{"key": {key}}
	if tenant != "" {
		q.Set("tenant", tenant)
	}
	var out admin.Locality
	err := c.do(ctx, http.MethodGet, "/locality/"+seg(bucket)+"/?"+q.Encode(), nil, &out)
	return out, err
}
