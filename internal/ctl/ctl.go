// Package ctl owns `facet ctl`, the command-line client of the control API
// (internal/admin). Every subcommand is one API call; -o json prints the
// API's answer as one JSON document for scripts, -o table is for people.
package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/admin"
)

// Defaults and environment variables of the persistent flags.
const (
	DefaultAdminURL = "http://127.0.0.1:9001"
	EnvAdminURL     = "FACET_ADMIN"
	EnvAdminToken   = "FACET_ADMIN_TOKEN"
	// EnvCA names the CA file that verifies an https:// admin URL.
	EnvCA = "FACET_CA"
)

type options struct {
	adminURL             string
	token                string
	accessKey, secretKey string
	output               string
	caFile               string
}

// NewCommand returns the `ctl` command tree.
func NewCommand() *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "ctl",
		Short: "Administer a running Facet server through its control API",
		Long: "ctl talks to the control API of a running `facet serve`.\n\n" +
			"The server address comes from --admin or " + EnvAdminURL + ", the admin token from --token or " + EnvAdminToken + ".\n" +
			"A tenant uses its own access key instead (--access-key and --secret-key, or " + EnvAccessKey + " and " + EnvSecretKey +
			"): the calls are signed as S3 requests are, and reach only the tenant's own resources (its tenant, keys, buckets, " +
			"usage, policies, metrics and recycle bin), e.g. `facet ctl trash list`.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.adminURL, "admin", DefaultAdminURL, "control API base URL (env "+EnvAdminURL+")")
	// No default shown: the token is a secret and must not appear in help.
	pf.StringVar(&o.token, "token", "", "admin bearer token (env "+EnvAdminToken+")")
	pf.StringVar(&o.caFile, "ca", "", "PEM CA certificate(s) that verify an https:// admin URL's server, instead of the system's roots (env "+EnvCA+")")
	pf.StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	pf.StringVar(&o.accessKey, "access-key", "", "a tenant's access key, to act as that tenant instead of the admin (env "+EnvAccessKey+")")
	pf.StringVar(&o.secretKey, "secret-key", "", "the access key's secret (env "+EnvSecretKey+")")

	cmd.AddCommand(o.trashCommand(), o.auditCommand())
	cmd.AddCommand(o.scrubCommand())
	cmd.AddCommand(o.tenantCommand(), o.keyCommand(), o.bucketCommand(),
		o.groupCommand(), o.policyCommand(), o.filterCommand(), o.controllerCommand(),
		o.localityCommand(), o.nodeCommand(), o.contextCommand(), o.poolCommand(), o.volumeCommand())
	cmd.AddCommand(o.sloCommand(), o.bwCommand(), o.backupCommand(), o.quotaCommand(), o.fsckCommand())
	return cmd
}

// run adapts an API action to cobra: flags are resolved (flag, then
// environment, then default) only when a command actually runs, and usage is
// silenced once the arguments were accepted, so a server error prints just
// the error.
func (o *options) run(action func(ctx context.Context, c *client, p *printer, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		cmd.SilenceUsage = true
		adminURL, token := o.adminURL, o.token
		if !cmd.Flags().Changed("admin") {
			if v := os.Getenv(EnvAdminURL); v != "" {
				adminURL = v
			}
		}
		if !cmd.Flags().Changed("token") {
			token = os.Getenv(EnvAdminToken)
		}
		if o.output != "table" && o.output != "json" {
			return fmt.Errorf("--output %q: want table or json", o.output)
		}
		caFile := o.caFile
		if !cmd.Flags().Changed("ca") {
			caFile = os.Getenv(EnvCA)
		}
		c, err := newClient(adminURL, token, o.tenantKeys(cmd), caFile)
		if err != nil {
			return err
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		return action(ctx, c, &printer{out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr(), json: o.output == "json", cmd: cmd}, args)
	}
}

// tenantKeys returns a tenant's credentials when some were given (flag,
// then environment), else nil: the admin token is used.
func (o *options) tenantKeys(cmd *cobra.Command) *tenantKeys {
	k := tenantKeys{accessKey: o.accessKey, secretKey: o.secretKey}
	if !cmd.Flags().Changed("access-key") {
		k.accessKey = os.Getenv(EnvAccessKey)
	}
	if !cmd.Flags().Changed("secret-key") {
		k.secretKey = os.Getenv(EnvSecretKey)
	}
	if k.accessKey == "" && k.secretKey == "" {
		return nil
	}
	return &k
}

func (o *options) tenantCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "tenant", Short: "Create, list, show and delete tenants; show their usage", Args: cobra.NoArgs}
	cmd.AddCommand(o.usageCommand(), o.tenantSetCommand())
	cmd.AddCommand(
		&cobra.Command{
			Use:   "create NAME",
			Short: "Create a tenant and its first access key (the secret is shown once)",
			Args:  cobra.ExactArgs(1),
			RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
				cr, err := c.createTenant(ctx, args[0])
				if err != nil {
					return err
				}
				return p.credentials(cr)
			}),
		},
		&cobra.Command{
			Use:   "list",
			Short: "List tenants",
			Args:  cobra.NoArgs,
			RunE: o.run(func(ctx context.Context, c *client, p *printer, _ []string) error {
				tl, err := c.listTenants(ctx)
				if err != nil {
					return err
				}
				rows := make([][]string, 0, len(tl.Tenants))
				for _, t := range tl.Tenants {
					rows = append(rows, []string{t.Name, stamp(t.Created)})
				}
				return p.print(tl, []string{"NAME", "CREATED"}, rows)
			}),
		},
		&cobra.Command{
			Use:   "get NAME",
			Short: "Show a tenant",
			Args:  cobra.ExactArgs(1),
			RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
				t, err := c.getTenant(ctx, args[0])
				if err != nil {
					return err
				}
				return p.print(t, []string{"NAME", "CREATED", "PLAIN NBD"}, [][]string{{t.Name, stamp(t.Created), strconv.FormatBool(t.AllowPlainNBD)}})
			}),
		},
		&cobra.Command{
			Use:   "delete NAME",
			Short: "Delete a tenant and revoke its keys (refused while it owns buckets)",
			Args:  cobra.ExactArgs(1),
			RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
				if err := c.deleteTenant(ctx, args[0]); err != nil {
					return err
				}
				return p.done(map[string]any{"tenant": args[0], "deleted": true},
					fmt.Sprintf("tenant %q deleted", args[0]))
			}),
		},
	)
	return cmd
}

// tenantSetCommand changes a tenant's settings; only the flags given
// change.
func (o *options) tenantSetCommand() *cobra.Command {
	var plainNBD bool
	cmd := &cobra.Command{
		Use:   "set NAME",
		Short: "Change a tenant's settings (--allow-plain-nbd[=false])",
		Args:  cobra.ExactArgs(1),
	}
	cmd.Flags().BoolVar(&plainNBD, "allow-plain-nbd", false,
		"let NBD clients that skip TLS open the tenant's volumes (loopback only, on a server started with --nbd-allow-plain-loopback)")
	cmd.RunE = o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
		var set admin.TenantSettings
		if cmd.Flags().Changed("allow-plain-nbd") {
			set.AllowPlainNBD = &plainNBD
		} else {
			return errors.New("nothing to set: give --allow-plain-nbd or --allow-plain-nbd=false")
		}
		t, err := c.setTenant(ctx, args[0], set)
		if err != nil {
			return err
		}
		return p.print(t, []string{"NAME", "CREATED", "PLAIN NBD"}, [][]string{{t.Name, stamp(t.Created), strconv.FormatBool(t.AllowPlainNBD)}})
	})
	return cmd
}

func (o *options) keyCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "key", Short: "Create, list and revoke access keys; rotate data keys", Args: cobra.NoArgs}
	cmd.AddCommand(o.dataKeyCommands()...)
	cmd.AddCommand(
		&cobra.Command{
			Use:   "create TENANT",
			Short: "Create an access key (the secret is shown once)",
			Args:  cobra.ExactArgs(1),
			RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
				cr, err := c.createKey(ctx, args[0])
				if err != nil {
					return err
				}
				return p.credentials(cr)
			}),
		},
		&cobra.Command{
			Use:   "list TENANT",
			Short: "List a tenant's access keys (never their secrets)",
			Args:  cobra.ExactArgs(1),
			RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
				kl, err := c.listKeys(ctx, args[0])
				if err != nil {
					return err
				}
				rows := make([][]string, 0, len(kl.Keys))
				for _, k := range kl.Keys {
					rows = append(rows, []string{k.AccessKey, stamp(k.Created)})
				}
				return p.print(kl, []string{"ACCESS KEY", "CREATED"}, rows)
			}),
		},
		&cobra.Command{
			Use:   "revoke TENANT ACCESS_KEY",
			Short: "Revoke an access key",
			Args:  cobra.ExactArgs(2),
			RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
				if err := c.revokeKey(ctx, args[0], args[1]); err != nil {
					return err
				}
				return p.done(map[string]any{"tenant": args[0], "access_key": args[1], "revoked": true},
					fmt.Sprintf("access key %s of tenant %q revoked", args[1], args[0]))
			}),
		},
	)
	return cmd
}

func (o *options) bucketCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "bucket", Short: "Inspect tenants' buckets", Args: cobra.NoArgs}
	cmd.AddCommand(&cobra.Command{
		Use:   "list TENANT",
		Short: "List a tenant's buckets",
		Args:  cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			bl, err := c.listBuckets(ctx, args[0])
			if err != nil {
				return err
			}
			rows := make([][]string, 0, len(bl.Buckets))
			for _, b := range bl.Buckets {
				rows = append(rows, []string{b.Name, stamp(b.Created)})
			}
			return p.print(bl, []string{"NAME", "CREATED"}, rows)
		}),
	})
	return cmd
}

// printer renders answers as one compact JSON document per command (one
// line, for scripts and line-oriented tools) or as an aligned table.
type printer struct {
	out, errOut io.Writer
	json        bool
	cmd         *cobra.Command // for its standard input
}

func (p *printer) print(v any, header []string, rows [][]string) error {
	if p.json {
		return p.writeJSON(v)
	}
	tw := tabwriter.NewWriter(p.out, 0, 4, 2, ' ', 0)
	for _, r := range append([][]string{header}, rows...) {
		for i, cell := range r {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, cell)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func (p *printer) credentials(cr admin.Credentials) error {
	if err := p.print(cr, []string{"TENANT", "ACCESS KEY", "SECRET KEY"}, [][]string{{cr.Tenant, cr.AccessKey, cr.SecretKey}}); err != nil {
		return err
	}
	if !p.json {
		// On stderr, so stdout stays the table alone.
		fmt.Fprintln(p.errOut, "Save the secret key now: it cannot be shown again.")
	}
	return nil
}

func (p *printer) done(v any, message string) error {
	if p.json {
		return p.writeJSON(v)
	}
	_, err := fmt.Fprintln(p.out, message)
	return err
}

func (p *printer) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	_, err = fmt.Fprintf(p.out, "%s\n", b)
	return err
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
