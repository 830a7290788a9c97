package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/admin"
)

// Commands for the control plane's resources: groups, policies, filters,
// data keys and usage.

func (o *options) groupCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "group", Short: "Create, list and change groups of tenants and buckets", Args: cobra.NoArgs}
	show := func(p *printer, g admin.Group) error {
		return p.print(g, []string{"NAME", "MEMBERS"}, [][]string{{g.Name, members(g.Members)}})
	}
	cmd.AddCommand(
		&cobra.Command{
			Use:   "create NAME [MEMBER...]",
			Short: "Create a group; a member is TENANT or TENANT/BUCKET",
			Args:  cobra.MinimumNArgs(1),
			RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
				g, err := c.createGroup(ctx, args[0], args[1:])
				if err != nil {
					return err
				}
				return show(p, g)
			}),
		},
		&cobra.Command{
			Use:   "list",
			Short: "List groups",
			Args:  cobra.NoArgs,
			RunE: o.run(func(ctx context.Context, c *client, p *printer, _ []string) error {
				gl, err := c.listGroups(ctx)
				if err != nil {
					return err
				}
				rows := make([][]string, 0, len(gl.Groups))
				for _, g := range gl.Groups {
					rows = append(rows, []string{g.Name, members(g.Members), stamp(g.Updated)})
				}
				return p.print(gl, []string{"NAME", "MEMBERS", "UPDATED"}, rows)
			}),
		},
		&cobra.Command{
			Use:   "get NAME",
			Short: "Show a group",
			Args:  cobra.ExactArgs(1),
			RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
				g, err := c.getGroup(ctx, args[0])
				if err != nil {
					return err
				}
				return show(p, g)
			}),
		},
		&cobra.Command{
			Use:   "delete NAME",
			Short: "Delete a group",
			Args:  cobra.ExactArgs(1),
			RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
				if err := c.deleteGroup(ctx, args[0]); err != nil {
					return err
				}
				return p.done(map[string]any{"group": args[0], "deleted": true}, fmt.Sprintf("group %q deleted", args[0]))
			}),
		},
		&cobra.Command{
			Use:   "add NAME MEMBER...",
			Short: "Add members to a group",
			Args:  cobra.MinimumNArgs(2),
			RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
				g, err := c.addGroupMembers(ctx, args[0], args[1:])
				if err != nil {
					return err
				}
				return show(p, g)
			}),
		},
		&cobra.Command{
			Use:   "remove NAME MEMBER...",
			Short: "Remove members from a group (all named members must be in it)",
			Args:  cobra.MinimumNArgs(2),
			RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
				g, err := c.removeGroupMembers(ctx, args[0], args[1:])
				if err != nil {
					return err
				}
				return show(p, g)
			}),
		},
	)
	return cmd
}

func members(ms []string) string {
	if len(ms) == 0 {
		return "-"
	}
	return strings.Join(ms, ",")
}

// policySource is where a policy text comes from: the argument, or -f FILE
// ("-": standard input). Its name prefixes diagnostics, as a compiler's
// file name does.
type policySource struct{ file string }

func (ps *policySource) addFlag(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&ps.file, "file", "f", "", `read the policies from FILE ("-": standard input)`)
}

func (ps *policySource) read(cmd *cobra.Command, args []string) (text, name string, err error) {
	switch {
	case ps.file != "" && len(args) > 0:
		return "", "", errors.New("give the policy text as an argument or with -f, not both")
	case ps.file == "-":
		b, err := io.ReadAll(cmd.InOrStdin())
		if err != nil {
			return "", "", fmt.Errorf("read standard input: %w", err)
		}
		return string(b), "<stdin>", nil
	case ps.file != "":
		b, err := os.ReadFile(ps.file)
		if err != nil {
			return "", "", err
		}
		return string(b), ps.file, nil
	case len(args) == 1:
		return args[0], "<policy>", nil
	}
	return "", "", errors.New(`no policy text: give it as an argument ("FOR TENANT t1 DO SET compression") or with -f FILE`)
}

func (o *options) policyCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "policy", Short: "Add, list, validate, explain and delete policies", Args: cobra.NoArgs}

	var addSrc, valSrc policySource
	add := &cobra.Command{
		Use:   `add ["POLICY TEXT"] [-f FILE]`,
		Short: "Validate, store and apply policies (one or many; all or none)",
		Args:  cobra.MaximumNArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			text, name, err := addSrc.read(p.cmd, args)
			if err != nil {
				return err
			}
			applied, err := c.applyPolicies(ctx, text)
			var ae *apiError
			if errors.As(err, &ae) && len(ae.Errors) > 0 {
				writeDiagnostics(p.errOut, name, "error", ae.Errors)
				writeDiagnostics(p.errOut, name, "warning", ae.Warnings)
				return fmt.Errorf("policy text is invalid (%d error(s)); nothing was stored", len(ae.Errors))
			}
			if err != nil {
				return err
			}
			writeDiagnostics(p.errOut, name, "warning", applied.Warnings)
			return p.print(applied, policyHeader, policyRows(applied.Policies))
		}),
	}
	addSrc.addFlag(add)

	validate := &cobra.Command{
		Use:   `validate ["POLICY TEXT"] [-f FILE]`,
		Short: "Check policies without storing them (exit status 1 when invalid)",
		Args:  cobra.MaximumNArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			text, name, err := valSrc.read(p.cmd, args)
			if err != nil {
				return err
			}
			res, err := c.validatePolicies(ctx, text)
			if err != nil {
				return err
			}
			if !p.json {
				writeDiagnostics(p.errOut, name, "error", res.Errors)
				writeDiagnostics(p.errOut, name, "warning", res.Warnings)
			}
			rows := make([][]string, 0, len(res.Policies))
			for _, s := range res.Policies {
				rows = append(rows, []string{strconv.Itoa(s.Line), stateNote(s.State, s.Reason), s.Text})
			}
			if err := p.print(res, []string{"LINE", "STATE", "POLICY"}, rows); err != nil {
				return err
			}
			if !res.Valid {
				return fmt.Errorf("policy text is invalid (%d error(s))", len(res.Errors))
			}
			return nil
		}),
	}
	valSrc.addFlag(validate)

	var eq struct{ tenant, bucket, key, size, typ string }
	explain := &cobra.Command{
		Use:   "explain --tenant TENANT [--bucket BUCKET [--key KEY]] [--size SIZE] [--type CONTENT-TYPE]",
		Short: "Show the effective pipelines for a tenant, bucket or object, and which policy set each filter",
		Args:  cobra.NoArgs,
		RunE: o.run(func(ctx context.Context, c *client, p *printer, _ []string) error {
			q := url.Values{"tenant": {eq.tenant}}
			for k, v := range map[string]string{"bucket": eq.bucket, "key": eq.key, "type": eq.typ} {
				if v != "" {
					q.Set(k, v)
				}
			}
			if eq.size != "" {
				n, err := parseSize(eq.size)
				if err != nil {
					return err
				}
				q.Set("size", strconv.FormatInt(n, 10))
			}
			ex, err := c.explain(ctx, q)
			if err != nil {
				return err
			}
			return p.explanation(ex)
		}),
	}
	f := explain.Flags()
	f.StringVar(&eq.tenant, "tenant", "", "tenant (required)")
	f.StringVar(&eq.bucket, "bucket", "", "bucket")
	f.StringVar(&eq.key, "key", "", "object key (needs --bucket)")
	f.StringVar(&eq.size, "size", "", "object size: bytes, or with a unit (KB, MB, GB: powers of 1000; KiB, MiB, GiB: of 1024)")
	f.StringVar(&eq.typ, "type", "", "object content type, as OBJECT_TYPE conditions see it (application/pdf)")
	_ = explain.MarkFlagRequired("tenant") // the flag exists: cannot fail

	cmd.AddCommand(add, validate, explain,
		&cobra.Command{
			Use:   "list",
			Short: "List policies in declaration order, with their state",
			Args:  cobra.NoArgs,
			RunE: o.run(func(ctx context.Context, c *client, p *printer, _ []string) error {
				pl, err := c.listPolicies(ctx)
				if err != nil {
					return err
				}
				return p.print(pl, policyHeader, policyRows(pl.Policies))
			}),
		},
		&cobra.Command{
			Use:   "get ID",
			Short: "Show a policy",
			Args:  cobra.ExactArgs(1),
			RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
				pol, err := c.getPolicy(ctx, args[0])
				if err != nil {
					return err
				}
				return p.print(pol, policyHeader, policyRows([]admin.Policy{pol}))
			}),
		},
		&cobra.Command{
			Use:   "delete ID",
			Short: "Delete a policy",
			Args:  cobra.ExactArgs(1),
			RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
				if err := c.deletePolicy(ctx, args[0]); err != nil {
					return err
				}
				return p.done(map[string]any{"policy": args[0], "deleted": true}, fmt.Sprintf("policy %s deleted", args[0]))
			}),
		},
	)
	return cmd
}

var policyHeader = []string{"ID", "NAME", "STATE", "POLICY"}

func policyRows(ps []admin.Policy) [][]string {
	rows := make([][]string, 0, len(ps))
	for _, pol := range ps {
		name := pol.Name
		if name == "" {
			name = "-"
		}
		rows = append(rows, []string{pol.ID, name, stateNote(pol.State, pol.Reason), oneLine(pol.Text)})
	}
	return rows
}

// stateNote is a state with its reason, so that `policy list` says why a
// policy is pending.
func stateNote(state, reason string) string {
	if reason == "" {
		return state
	}
	return state + " (" + reason + ")"
}

// oneLine keeps a table row on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// writeDiagnostics prints diagnostics as compilers do: position, message,
// the source line, a caret under the column, and the suggestion.
func writeDiagnostics(w io.Writer, name, severity string, ds []admin.Diagnostic) {
	for _, d := range ds {
		if d.Line > 0 {
			fmt.Fprintf(w, "%s:%d:%d: %s: %s\n", name, d.Line, d.Column, severity, d.Message)
		} else {
			fmt.Fprintf(w, "%s: %s: %s\n", name, severity, d.Message)
		}
		if d.Source != "" {
			fmt.Fprintf(w, "    %s\n    %s^\n", d.Source, caretPad(d.Source, d.Column))
		}
		if d.Suggestion != "" {
			fmt.Fprintf(w, "    did you mean %q?\n", d.Suggestion)
		}
		if len(d.Policies) > 0 {
			fmt.Fprintf(w, "    (policies involved: %s)\n", strings.Join(d.Policies, ", "))
		}
	}
}

// caretPad is the whitespace that puts a caret under character col (1-based)
// of src: tabs stay tabs, so the caret lines up however tabs are shown.
func caretPad(src string, col int) string {
	var b strings.Builder
	i := 1
	for _, r := range src {
		if i >= col {
			break
		}
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
		i++
	}
	return b.String()
}

// parseSize reads a size in bytes, bare or with a unit as the policy
// language writes them: KB, MB, GB, TB are powers of 1000, KiB, MiB, GiB,
// TiB powers of 1024.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	mult := map[string]float64{
		"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	}[strings.ToLower(unit)]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || v < 0 || v*mult > math.MaxInt64 {
		return 0, fmt.Errorf("--size %q: want bytes, or a number with B, KB, MB, GB, TB, KiB, MiB, GiB or TiB", s)
	}
	return int64(v * mult), nil
}

func (p *printer) explanation(ex admin.Explanation) error {
	var rows [][]string
	for _, pl := range ex.Pipelines {
		if len(pl.Filters) == 0 {
			rows = append(rows, []string{pl.Method, pl.Stage, "-", "(none)", "", "", "", ""})
		}
		for i, st := range pl.Filters {
			rows = append(rows, []string{pl.Method, pl.Stage, strconv.Itoa(i + 1), st.Filter, params(st.Params), policyRef(st), st.Level, st.Target})
		}
	}
	if err := p.print(ex, []string{"METHOD", "STAGE", "#", "FILTER", "PARAMS", "POLICY", "LEVEL", "TARGET"}, rows); err != nil {
		return err
	}
	if p.json {
		return nil
	}
	for _, st := range ex.Removed {
		note := ""
		if st.Note != "" {
			note = ": " + st.Note
		}
		fmt.Fprintf(p.out, "removed: %s from %s (%s %s)%s\n", st.Filter, policyRef(st), st.Level, st.Target, note)
	}
	if len(ex.Pending) > 0 {
		fmt.Fprintf(p.out, "pending (metric conditions, not activated): %s\n", strings.Join(ex.Pending, ", "))
	}
	writeDiagnostics(p.errOut, "explain", "warning", ex.Warnings)
	return nil
}

func policyRef(st admin.ExplainStep) string {
	if st.PolicyName != "" {
		return st.Policy + " (" + st.PolicyName + ")"
	}
	return st.Policy
}

// params renders parameters in a stable order.
func params(m map[string]string) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

func (o *options) filterCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "filter", Short: "Inspect the filter registry; register WebAssembly filters", Args: cobra.NoArgs}
	var tenant string
	cmd.AddCommand(o.filterAdminCommands()...)
	cmd.AddCommand(
		&cobra.Command{
			Use:   "list",
			Short: "List filters: kind, methods, stages, reversibility, parameters",
			Args:  cobra.NoArgs,
			RunE: o.run(func(ctx context.Context, c *client, p *printer, _ []string) error {
				fl, err := c.listFiltersFor(ctx, tenant)
				if err != nil {
					return err
				}
				rows := make([][]string, 0, len(fl.Filters))
				for _, f := range fl.Filters {
					names := make([]string, 0, len(f.Params))
					for _, pr := range f.Params {
						names = append(names, pr.Name)
					}
					rows = append(rows, []string{f.Name, f.Kind, strconv.Itoa(f.Version), orDash(f.Owner), list(f.Methods), list(f.Stages),
						strconv.FormatBool(f.Reversible), list(names)})
				}
				return p.print(fl, []string{"NAME", "KIND", "VERSION", "OWNER", "METHODS", "STAGES", "REVERSIBLE", "PARAMS"}, rows)
			}),
		},
		&cobra.Command{
			Use:   "show NAME",
			Short: "Show a filter and its typed parameters",
			Args:  cobra.ExactArgs(1),
			RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
				f, err := c.getFilter(ctx, args[0])
				if err != nil {
					return err
				}
				if !p.json {
					fmt.Fprintf(p.out, "%s (%s, version %d): methods %s, stages %s, reversible %t\n",
						f.Name, f.Kind, f.Version, list(f.Methods), list(f.Stages), f.Reversible)
					if f.Owner != "" {
						fmt.Fprintf(p.out, "owner: tenant %s (usable only in its policies)\n", f.Owner)
					}
					if f.Doc != "" {
						fmt.Fprintln(p.out, f.Doc)
					}
				}
				rows := make([][]string, 0, len(f.Params))
				for _, pr := range f.Params {
					rng := "-"
					if pr.Min != nil && pr.Max != nil {
						rng = fmt.Sprintf("%g..%g", *pr.Min, *pr.Max)
					}
					rows = append(rows, []string{pr.Name, pr.Type, orDash(pr.Default), rng, list(pr.Enum), pr.Doc})
				}
				return p.print(f, []string{"PARAM", "TYPE", "DEFAULT", "RANGE", "VALUES", "DOC"}, rows)
			}),
		},
	)
	if ls, _, err := cmd.Find([]string{"list"}); err == nil {
		ls.Flags().StringVar(&tenant, "tenant", "", "only what this tenant's policies may use (native, the administrators' and its own)")
	}
	return cmd
}

func list(xs []string) string {
	if len(xs) == 0 {
		return "-"
	}
	return strings.Join(xs, ",")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// dataKeyCommands are `key rotate-data` and `key data`.
func (o *options) dataKeyCommands() []*cobra.Command {
	show := func(p *printer, dk admin.DataKeys) error {
		rows := make([][]string, 0, len(dk.History))
		for _, h := range dk.History {
			cur := ""
			if h.ID == dk.Current {
				cur = "current"
			}
			rows = append(rows, []string{h.ID, stamp(h.Created), cur})
		}
		return p.print(dk, []string{"DATA KEY ID", "CREATED", ""}, rows)
	}
	return []*cobra.Command{
		{
			Use:   "rotate-data TENANT",
			Short: "Give a tenant a new data-key id for new objects (older objects stay readable)",
			Args:  cobra.ExactArgs(1),
			RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
				dk, err := c.rotateDataKey(ctx, args[0])
				if err != nil {
					return err
				}
				return show(p, dk)
			}),
		},
		{
			Use:   "data TENANT",
			Short: "List a tenant's data-key ids",
			Args:  cobra.ExactArgs(1),
			RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
				dk, err := c.dataKeys(ctx, args[0])
				if err != nil {
					return err
				}
				return show(p, dk)
			}),
		},
	}
}

func (o *options) usageCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "usage TENANT",
		Short: "Show what a tenant stores: objects, logical and stored bytes, savings",
		Args:  cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			u, err := c.tenantUsage(ctx, args[0])
			if err != nil {
				return err
			}
			return p.print(u, []string{"TENANT", "OBJECTS", "LOGICAL BYTES", "STORED BYTES", "SAVED BYTES", "SAVINGS"},
				[][]string{{u.Tenant, strconv.FormatInt(u.Objects, 10), strconv.FormatInt(u.LogicalBytes, 10),
					strconv.FormatInt(u.StoredBytes, 10), strconv.FormatInt(u.SavedBytes, 10), fmt.Sprintf("%.1f%%", 100*u.Savings)}})
		}),
	}
}
