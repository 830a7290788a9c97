package ctl

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/filter"
)

// filterSpecFlags are the flags describing a WASM filter.
type filterSpecFlags struct {
	wasm       string
	methods    []string
	stages     []string
	reversible bool
	params     []string
	owner      string
	doc        string
	deps       []string
}

func (f *filterSpecFlags) register(cmd *cobra.Command, create bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.wasm, "wasm", "", "the module: a WASI preview1 command (.wasm)")
	fl.StringSliceVar(&f.methods, "methods", nil, "methods it runs on: PUT, GET (comma-separated)")
	fl.StringSliceVar(&f.stages, "stages", nil, "stages it may run at: gateway, storage; the first is a policy's default")
	fl.BoolVar(&f.reversible, "reversible", false, "undone on GET by running the module with FACET_DIRECTION=get")
	fl.StringArrayVar(&f.params, "param", nil, "a typed parameter NAME:TYPE[:DEFAULT] (string, int, bool, size, rate, duration, percent); repeat")
	fl.StringVar(&f.owner, "owner", "", "the tenant whose policies alone may use it (default: every tenant, the marketplace)")
	fl.StringVar(&f.doc, "doc", "", "what it does, for people")
	fl.StringSliceVar(&f.deps, "dependency", nil, "dependencies mounted read-only at /deps/NAME (comma-separated or repeated)")
	if create {
		_ = cmd.MarkFlagRequired("wasm")
		_ = cmd.MarkFlagRequired("methods")
		_ = cmd.MarkFlagRequired("stages")
	}
}

// parseParam reads NAME:TYPE[:DEFAULT]; the default may itself hold ':'.
func parseParam(s string) (filter.ParamSpec, error) {
	parts := strings.SplitN(s, ":", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return filter.ParamSpec{}, fmt.Errorf("--param %q: want NAME:TYPE[:DEFAULT]", s)
	}
	ps := filter.ParamSpec{Name: parts[0], Type: filter.ParamType(strings.ToLower(parts[1]))}
	if len(parts) == 3 {
		ps.Default = parts[2]
	}
	return ps, nil
}

// descriptor merges the flags the user changed into base.
func (f *filterSpecFlags) descriptor(cmd *cobra.Command, name string, base map[string]any) (map[string]any, error) {
	d := map[string]any{"name": name}
	for k, v := range base {
		d[k] = v
	}
	ch := cmd.Flags().Changed
	if ch("methods") {
		d["methods"] = f.methods
	}
	if ch("stages") {
		d["stages"] = f.stages
	}
	if ch("reversible") {
		d["reversible"] = f.reversible
	}
	if ch("owner") {
		d["owner"] = f.owner
	}
	if ch("doc") {
		d["doc"] = f.doc
	}
	if ch("dependency") {
		d["dependencies"] = f.deps
	}
	if ch("param") {
		ps := make([]filter.ParamSpec, 0, len(f.params))
		for _, s := range f.params {
			p, err := parseParam(s)
			if err != nil {
				return nil, err
			}
			ps = append(ps, p)
		}
		d["params"] = ps
	}
	return d, nil
}

func (o *options) filterAdminCommands() []*cobra.Command {
	var cf, uf filterSpecFlags
	create := &cobra.Command{
		Use:   "create NAME --wasm FILE --methods PUT,GET --stages gateway,storage",
		Short: "Register a WebAssembly filter (version 1); use it in policies at once",
		Args:  cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			d, err := cf.descriptor(p.cmd, args[0], nil)
			if err != nil {
				return err
			}
			code, err := os.ReadFile(cf.wasm)
			if err != nil {
				return err
			}
			fi, err := c.uploadFilter(ctx, http.MethodPost, "/filters", d, code)
			if err != nil {
				return err
			}
			return printFilter(p, fi)
		}),
	}
	cf.register(create, true)
	update := &cobra.Command{
		Use:   "update NAME [--wasm FILE] [flags to change]",
		Short: "Make a new version of a WebAssembly filter; running requests keep theirs",
		Args:  cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			// Only the changed fields: the server merges them into the
			// filter's current descriptor.
			d, err := uf.descriptor(p.cmd, args[0], nil)
			if err != nil {
				return err
			}
			var code []byte
			if uf.wasm != "" {
				if code, err = os.ReadFile(uf.wasm); err != nil {
					return err
				}
			}
			fi, err := c.uploadFilter(ctx, http.MethodPut, "/filters/"+seg(args[0]), d, code)
			if err != nil {
				return err
			}
			return printFilter(p, fi)
		}),
	}
	uf.register(update, false)
	var force bool
	del := &cobra.Command{
		Use:   "delete NAME",
		Short: "Unregister a WebAssembly filter (refused while policies use it)",
		Args:  cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			path := "/filters/" + seg(args[0])
			if force {
				path += "?force=true"
			}
			if err := c.do(ctx, http.MethodDelete, path, nil, nil); err != nil {
				return err
			}
			return p.done(map[string]string{"deleted": args[0]}, "filter "+args[0]+" deleted")
		}),
	}
	del.Flags().BoolVar(&force, "force", false, "delete a reversible filter even though objects written through it can then not be read back")
	return []*cobra.Command{create, update, del, o.dependencyCommand()}
}

func printFilter(p *printer, f admin.FilterInfo) error {
	owner := f.Owner
	if owner == "" {
		owner = "-"
	}
	return p.print(f, []string{"NAME", "KIND", "VERSION", "OWNER", "METHODS", "STAGES", "REVERSIBLE"},
		[][]string{{f.Name, f.Kind, strconv.Itoa(f.Version), owner, list(f.Methods), list(f.Stages), strconv.FormatBool(f.Reversible)}})
}

func (o *options) dependencyCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "dependency", Short: "Read-only files filters mount at /deps/NAME (dictionaries, models)", Args: cobra.NoArgs}
	var file, owner, doc, tenant string
	create := &cobra.Command{
		Use:   "create NAME --file FILE",
		Short: "Upload a dependency, or replace its content",
		Args:  cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			data, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			d := admin.DependencyDescriptor{Name: args[0], Owner: owner, Doc: doc}
			var out admin.Dependency
			if err := c.upload(ctx, http.MethodPost, "/filters/dependencies", d, "data", data, &out); err != nil {
				return err
			}
			return printDeps(p, out, []admin.Dependency{out})
		}),
	}
	create.Flags().StringVar(&file, "file", "", "the file")
	create.Flags().StringVar(&owner, "owner", "", "the tenant whose filters alone may mount it (default: every filter)")
	create.Flags().StringVar(&doc, "doc", "", "what it is, for people")
	_ = create.MarkFlagRequired("file")
	ls := &cobra.Command{
		Use:   "list",
		Short: "List dependencies",
		Args:  cobra.NoArgs,
		RunE: o.run(func(ctx context.Context, c *client, p *printer, _ []string) error {
			var out admin.DependencyList
			path := "/filters/dependencies"
			if tenant != "" {
				path += "?tenant=" + url.QueryEscape(tenant)
			}
			if err := c.do(ctx, http.MethodGet, path, nil, &out); err != nil {
				return err
			}
			return printDeps(p, out, out.Dependencies)
		}),
	}
	ls.Flags().StringVar(&tenant, "tenant", "", "only what this tenant's filters may mount")
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a dependency",
		Args:  cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			var out admin.Dependency
			if err := c.do(ctx, http.MethodGet, "/filters/dependencies/"+seg(args[0]), nil, &out); err != nil {
				return err
			}
			return printDeps(p, out, []admin.Dependency{out})
		}),
	}
	del := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a dependency (refused while filters declare it)",
		Args:  cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			if err := c.do(ctx, http.MethodDelete, "/filters/dependencies/"+seg(args[0]), nil, nil); err != nil {
				return err
			}
			return p.done(map[string]string{"deleted": args[0]}, "dependency "+args[0]+" deleted")
		}),
	}
	cmd.AddCommand(create, ls, show, del)
	return cmd
}

func printDeps(p *printer, v any, ds []admin.Dependency) error {
	rows := make([][]string, 0, len(ds))
	for _, d := range ds {
		rows = append(rows, []string{d.Name, orDash(d.Owner), strconv.FormatInt(d.Size, 10), d.SHA256[:min(12, len(d.SHA256))], orDash(d.Doc)})
	}
	return p.print(v, []string{"NAME", "OWNER", "BYTES", "SHA256", "DOC"}, rows)
}

// uploadFilter sends a descriptor and, when code is not nil, a module.
func (c *client) uploadFilter(ctx context.Context, method, path string, descriptor any, code []byte) (admin.FilterInfo, error) {
	var out admin.FilterInfo
	err := c.upload(ctx, method, path, descriptor, "module", code, &out)
	return out, err
}

// upload sends a multipart form: a JSON "descriptor" part and, when data
// is not nil, a binary part named dataPart.
func (c *client) upload(ctx context.Context, method, path string, descriptor any, dataPart string, data []byte, out any) error {
	body, ct, err := admin.UploadBody(descriptor, dataPart, data)
	if err != nil {
		return err
	}
	req, err := c.request(ctx, method, path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", ct)
	return c.send(req, out)
}

func (c *client) listFiltersFor(ctx context.Context, tenant string) (admin.FilterList, error) {
	var out admin.FilterList
	path := "/filters"
	if tenant != "" {
		path += "?tenant=" + url.QueryEscape(tenant)
	}
	err := c.do(ctx, http.MethodGet, path, nil, &out)
	return out, err
}
