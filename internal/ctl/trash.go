package ctl

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/admin"
)

// Commands for the recycle bin: objects deleted under a recycle_bin policy.

func (o *options) trashCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "trash", Short: "List, restore and purge a tenant's deleted objects (the recycle_bin filter)", Args: cobra.NoArgs}
	cmd.AddCommand(&cobra.Command{
		Use:   "list [TENANT]",
		Short: "List a tenant's recycle bin, oldest deletion first (a tenant with its own keys may omit TENANT)",
		Args:  cobra.RangeArgs(0, 1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			tenant, _, err := c.trashTenant(ctx, args, 1)
			if err != nil {
				return err
			}
			l, err := c.listTrash(ctx, tenant)
			if err != nil {
				return err
			}
			rows := make([][]string, 0, len(l.Items))
			for _, it := range l.Items {
				rows = append(rows, []string{it.ID, it.Bucket, it.Key, strconv.FormatInt(it.Size, 10), stamp(it.DeletedAt), stamp(it.ExpiresAt)})
			}
			return p.print(l, []string{"ID", "BUCKET", "KEY", "SIZE", "DELETED", "EXPIRES"}, rows)
		}),
	})
	var overwrite bool
	restore := &cobra.Command{
		Use:   "restore [TENANT] ID",
		Short: "Put a deleted object back at its bucket and key (refused when the key holds an object, unless --overwrite; a tenant with its own keys may omit TENANT)",
		Args:  cobra.RangeArgs(1, 2),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			tenant, rest, err := c.trashTenant(ctx, args, 2)
			if err != nil {
				return err
			}
			it, err := c.restoreTrash(ctx, tenant, rest[0], overwrite)
			if err != nil {
				return err
			}
			return p.print(it, []string{"ID", "BUCKET", "KEY", "SIZE"}, [][]string{{it.ID, it.Bucket, it.Key, strconv.FormatInt(it.Size, 10)}})
		}),
	}
	restore.Flags().BoolVar(&overwrite, "overwrite", false, "replace the object now at the key")
	cmd.AddCommand(restore)
	cmd.AddCommand(&cobra.Command{
		Use:   "purge TENANT ID",
		Short: "Remove a deleted object from the recycle bin for good",
		Args:  cobra.ExactArgs(2),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			if err := c.do(ctx, http.MethodDelete, "/trash/"+seg(args[0])+"/"+seg(args[1]), nil, nil); err != nil {
				return err
			}
			return p.print(map[string]string{"purged": args[1]}, []string{"PURGED"}, [][]string{{args[1]}})
		}),
	})
	return cmd
}

// trashTenant splits args into the tenant and the rest: the tenant is
// the first of full arguments, or, when one is missing, the tenant whose
// keys sign the calls (the API's tenant list is then that tenant alone).
func (c *client) trashTenant(ctx context.Context, args []string, full int) (string, []string, error) {
	if len(args) == full {
		return args[0], args[1:], nil
	}
	if c.keys == nil {
		return "", nil, errors.New("name the TENANT (the admin token reaches every tenant's recycle bin)")
	}
	l, err := c.listTenants(ctx)
	if err != nil {
		return "", nil, err
	}
	if len(l.Tenants) != 1 {
		return "", nil, fmt.Errorf("the access key sees %d tenants; name the TENANT", len(l.Tenants))
	}
	return l.Tenants[0].Name, args, nil
}

func (c *client) listTrash(ctx context.Context, tenant string) (admin.TrashList, error) {
	var out admin.TrashList
	err := c.do(ctx, http.MethodGet, "/trash/"+seg(tenant), nil, &out)
	return out, err
}

func (c *client) restoreTrash(ctx context.Context, tenant, id string, overwrite bool) (admin.TrashItem, error) {
	var out admin.TrashItem
	path := "/trash/" + seg(tenant) + "/" + seg(id) + "/restore"
	if overwrite {
		path += "?overwrite=true"
	}
	err := c.do(ctx, http.MethodPost, path, nil, &out)
	return out, err
}
