package ctl

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/policy"
)

// Commands for quotas (/tenants/{name}/quota).

func (o *options) quotaCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "quota", Short: "Set, show and delete tenants' and buckets' quotas (bytes, objects, buckets, open uploads), and recount usage", Args: cobra.NoArgs}
	var setBucket, delBucket string
	vals := map[string]*string{}
	set := &cobra.Command{
		Use: "set TENANT",
		Short: "Set a tenant's quota, or with --bucket one of its buckets' (the flags given replace the stored limits, 0 removes one; " +
			"where a policy's SET quota also limits a field, the smaller limit applies)",
		Example: "  facet ctl quota set acme --bytes 1TiB --objects 10M --buckets 100 --uploads 500\n" +
			"  facet ctl quota set acme --bucket logs --bytes 200GB",
		Args: cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			body := admin.SetQuotaRequest{Bucket: setBucket}
			dst := map[string]**int64{"bytes": &body.Bytes, "objects": &body.Objects, "buckets": &body.Buckets, "uploads": &body.Uploads}
			n := 0
			for _, name := range []string{"bytes", "objects", "buckets", "uploads"} {
				raw := *vals[name]
				if raw == "" {
					continue
				}
				v, err := policy.ParseQuotaLimit(name, raw)
				if err != nil {
					return fmt.Errorf("quota set --%s: %w", name, err)
				}
				*dst[name] = &v
				n++
			}
			if n == 0 {
				return fmt.Errorf("quota set: give at least one of --bytes, --objects, --buckets, --uploads")
			}
			var out admin.ScopeQuota
			if err := c.do(ctx, http.MethodPut, "/tenants/"+seg(args[0])+"/quota", body, &out); err != nil {
				return err
			}
			return p.print(out, quotaHeader, quotaRows(args[0], out))
		}),
	}
	for _, f := range []struct{ name, help string }{
		{"bytes", "logical bytes stored, objects and open uploads' parts (1TiB, 500GB, 4096)"},
		{"objects", "objects (10M, 1000)"}, {"buckets", "buckets of the tenant"},
		{"uploads", "open multipart uploads (without one, the gateway's --tenant-max-uploads caps a tenant)"},
	} {
		vals[f.name] = set.Flags().String(f.name, "", f.help)
	}
	set.Flags().StringVar(&setBucket, "bucket", "", "one of the tenant's buckets, instead of the tenant")
	show := &cobra.Command{
		Use:     "show TENANT",
		Aliases: []string{"get"},
		Short:   "Show a tenant's and its buckets' limits (stored, from policies, effective) and usage",
		Args:    cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			var out admin.TenantQuota
			if err := c.do(ctx, http.MethodGet, "/tenants/"+seg(args[0])+"/quota", nil, &out); err != nil {
				return err
			}
			return p.print(out, quotaHeader, tenantQuotaRows(out))
		}),
	}
	del := &cobra.Command{
		Use:     "delete TENANT",
		Aliases: []string{"unset"},
		Short:   "Delete a tenant's stored quota, or with --bucket its bucket's (usage is kept; policies' quotas stay)",
		Args:    cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			path := "/tenants/" + seg(args[0]) + "/quota"
			if delBucket != "" {
				path += "?bucket=" + url.QueryEscape(delBucket)
			}
			if err := c.do(ctx, http.MethodDelete, path, nil, nil); err != nil {
				return err
			}
			return p.print(map[string]string{"deleted": args[0], "bucket": delBucket}, []string{"DELETED", "BUCKET"}, [][]string{{args[0], delBucket}})
		}),
	}
	del.Flags().StringVar(&delBucket, "bucket", "", "one of the tenant's buckets")
	recount := &cobra.Command{
		Use:   "recount TENANT",
		Short: "Set a tenant's usage counters to what the backend holds (walks its listings; repairs counters that drifted)",
		Args:  cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			var out admin.TenantQuota
			if err := c.do(ctx, http.MethodPost, "/tenants/"+seg(args[0])+"/quota:recount", nil, &out); err != nil {
				return err
			}
			return p.print(out, quotaHeader, tenantQuotaRows(out))
		}),
	}
	cmd.AddCommand(set, show, del, recount)
	return cmd
}

var quotaHeader = []string{"SCOPE", "QUOTA", "LIMIT", "STORED", "POLICY", "USED"}

// limitText renders a limit; 0 is none.
func limitText(n int64) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

// quotaRows renders one scope: a row per quota, then physical bytes.
func quotaRows(tenant string, q admin.ScopeQuota) [][]string {
	scope := tenant
	if q.Bucket != "" {
		scope = tenant + "/" + q.Bucket
	}
	rows := [][]string{
		{scope, "bytes", limitText(q.Effective.Bytes), limitText(q.Stored.Bytes), limitText(q.Policy.Bytes), strconv.FormatInt(q.Usage.Bytes, 10)},
		{scope, "objects", limitText(q.Effective.Objects), limitText(q.Stored.Objects), limitText(q.Policy.Objects), strconv.FormatInt(q.Usage.Objects, 10)},
	}
	if q.Bucket == "" {
		rows = append(rows, []string{scope, "buckets", limitText(q.Effective.Buckets), limitText(q.Stored.Buckets), limitText(q.Policy.Buckets), strconv.FormatInt(q.Usage.Buckets, 10)})
	}
	return append(rows,
		[]string{scope, "uploads", limitText(q.Effective.Uploads), limitText(q.Stored.Uploads), limitText(q.Policy.Uploads), strconv.FormatInt(q.Usage.Uploads, 10)},
		[]string{scope, "physical_bytes", "-", "-", "-", strconv.FormatInt(q.Usage.PhysicalBytes, 10)})
}

func tenantQuotaRows(q admin.TenantQuota) [][]string {
	rows := quotaRows(q.Tenant, q.ScopeQuota)
	for _, b := range q.Buckets {
		rows = append(rows, quotaRows(q.Tenant, b)...)
	}
	return rows
}
