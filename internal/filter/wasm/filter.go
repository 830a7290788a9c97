package wasm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/facet-sds/facet/internal/filter"
)

// sizeParam is the record entry holding the size of the plain stream a
// reversible module was given, which Decode must report before running
// the module. Parameter names starting with '_' are reserved for it.
const sizeParam = "_size"

// New compiles code and returns the description of a filter whose
// instances run it. info supplies the name, version, methods, stages,
// reversibility, parameters and doc; Kind and New are set here. A
// non-reversible filter's instances are filter.Transformers; a reversible
// one's are filter.Reversible, running the same module with
// FACET_DIRECTION=get to undo it.
//
// The compiled code lives until rt is closed: an update compiles a new
// module, and requests still running keep the old one.
func New(ctx context.Context, rt *Runtime, info filter.Info, code []byte, lim Limits) (*filter.Info, error) {
	if info.Name == "" || info.Version < 1 {
		return nil, fmt.Errorf("wasm filter: a name and a version >= 1 are required (got %q, %d)", info.Name, info.Version)
	}
	mod, err := rt.Compile(ctx, info.Name, code)
	if err != nil {
		return nil, err
	}
	return newInfo(info, map[int]Version{info.Version: {Module: mod}}, lim)
}

// Version is the code one version of a filter runs: its compiled module
// and the host directory of its dependencies (mounted read-only at
// /deps; empty for none).
type Version struct {
	Module *Module
	Deps   string
}

// newInfo returns the description of a filter whose current version is
// info.Version. versions holds that version and, for a reversible filter,
// the earlier ones still kept: an object is undone by the version of the
// module that wrote it, never by a later one.
func newInfo(info filter.Info, versions map[int]Version, lim Limits) (*filter.Info, error) {
	for _, ps := range info.Params {
		if strings.HasPrefix(ps.Name, "_") || ps.Name == "" {
			return nil, fmt.Errorf("wasm filter %q: parameter name %q is reserved", info.Name, ps.Name)
		}
	}
	cur, ok := versions[info.Version]
	if !ok || cur.Module == nil {
		return nil, fmt.Errorf("wasm filter %q: no module for its current version %d", info.Name, info.Version)
	}
	lim = lim.withDefaults()
	in := info
	in.Kind = "wasm"
	in.Config = func() filter.Provisioner { return &config{info: &in, cur: cur, versions: versions, lim: lim} }
	return &in, nil
}

// config is a WASM filter's parameters: declared at registration
// (--param name:type:default), they are checked against those specs when
// the policy is checked (filter.Decode) and handed to the module as they
// are.
type config struct {
	Params filter.Params `param:"*"`

	info     *filter.Info
	cur      Version
	versions map[int]Version
	lim      Limits
}

var _ filter.Provisioner = (*config)(nil)

func (c *config) Provision(filter.Env) (filter.Filter, error) {
	base := transformer{info: c.info, ver: c.cur, params: c.Params, lim: c.lim}
	if c.info.Reversible {
		return &reversible{t: base, versions: c.versions}, nil
	}
	return &base, nil
}

// resolve rejects unknown parameters and applies defaults, without type
// checks: it reads the parameters a reverse plan recorded, which an older
// version of the module may have declared otherwise.
func resolve(in *filter.Info, p filter.Params) (map[string]string, error) {
	out := make(map[string]string, len(in.Params))
	for name, v := range p {
		if !slices.ContainsFunc(in.Params, func(ps filter.ParamSpec) bool { return ps.Name == name }) {
			return nil, fmt.Errorf("wasm filter %q: unknown parameter %q", in.Name, name)
		}
		out[name] = v
	}
	for _, ps := range in.Params {
		if _, set := out[ps.Name]; !set && ps.Default != "" {
			out[ps.Name] = ps.Default
		}
	}
	return out, nil
}

var (
	_ filter.Transformer = (*transformer)(nil)
	_ filter.Reversible  = (*reversible)(nil)
)

// transformer runs the module forward on the request's stream.
type transformer struct {
	info   *filter.Info
	ver    Version
	params map[string]string
	lim    Limits
}

func (t *transformer) Info() *filter.Info { return t.info }

func (t *transformer) invocation(req *filter.Request, dir string, size int64, version int, deps string, params map[string]string) Invocation {
	inv := Invocation{Direction: dir, Size: size, Version: version, Params: params, Deps: deps}
	if req != nil {
		inv.Tenant, inv.Bucket, inv.Key, inv.Method = req.Tenant, req.Bucket, req.Key, string(req.Method)
		inv.ContentType = req.Header["Content-Type"]
	}
	return inv
}

// Transform runs the module over in. The direction is "get" on GET and
// "put" otherwise.
func (t *transformer) Transform(ctx context.Context, req *filter.Request, in io.Reader) (io.Reader, error) {
	dir, size := "put", int64(-1)
	if req != nil {
		size = req.Size
		if req.Method == filter.MethodGet {
			dir = "get"
		}
	}
	out, err := t.ver.Module.Start(ctx, t.invocation(req, dir, size, t.info.Version, t.ver.Deps, t.params), t.lim, in)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// reversible runs the module with direction put on PUT and get on GET.
// It holds its transformer rather than embedding it: a one-way Transform
// of a reversible filter would store bytes no record can undo. versions
// are the modules kept for undoing objects written by earlier versions.
type reversible struct {
	t        transformer
	versions map[int]Version
}

func (r *reversible) Info() *filter.Info { return r.t.info }

// Encode streams plain through the module. The record holds the
// parameters (the module needs them to undo its work) and the plain size.
func (r *reversible) Encode(ctx context.Context, req *filter.Request, plain io.Reader) (io.Reader, func() (filter.Record, error), error) {
	size := int64(-1)
	if req != nil {
		size = req.Size
	}
	in := &counter{r: plain}
	run, err := r.t.ver.Module.Start(ctx, r.t.invocation(req, "put", size, r.t.info.Version, r.t.ver.Deps, r.t.params), r.t.lim, in)
	if err != nil {
		return nil, nil, err
	}
	out := &counter{r: run}
	rec := func() (filter.Record, error) {
		if !out.eof {
			return filter.Record{}, fmt.Errorf("wasm filter %q: record requested before the stream reached EOF", r.t.info.Name)
		}
		p := maps.Clone(r.t.params)
		if p == nil {
			p = map[string]string{}
		}
		p[sizeParam] = strconv.FormatInt(in.n, 10)
		return filter.Record{Filter: r.t.info.Name, Version: r.t.info.Version, Params: p, Size: out.n}, nil
	}
	return out, rec, nil
}

// Decode returns a view that runs the module with direction get. A
// module is an opaque stream transform, so every Open decodes the whole
// stored stream from its start and skips to the range: a range costs as
// much as a whole GET up to its end (docs/filters.md).
func (r *reversible) Decode(_ context.Context, req *filter.Request, rec filter.Record, src filter.Source) (filter.Source, error) {
	name := r.t.info.Name
	if rec.Filter != name {
		return nil, fmt.Errorf("wasm filter %q: asked to undo a record of filter %q: %w", name, rec.Filter, filter.ErrIntegrity)
	}
	ver, ok := r.versions[rec.Version]
	if !ok {
		return nil, fmt.Errorf("wasm filter %q: the object was written by version %d, whose module is no longer kept (current version %d)", name, rec.Version, r.t.info.Version)
	}
	if src.Size() != rec.Size {
		return nil, fmt.Errorf("wasm filter %q: stored stream holds %d bytes, record says %d: %w", name, src.Size(), rec.Size, filter.ErrIntegrity)
	}
	plain, err := strconv.ParseInt(rec.Params[sizeParam], 10, 64)
	if err != nil || plain < 0 {
		return nil, fmt.Errorf("wasm filter %q: record has no valid plain size: %w", name, filter.ErrIntegrity)
	}
	p := filter.Params{}
	for k, v := range rec.Params {
		if k != sizeParam {
			p[k] = v
		}
	}
	params, err := resolve(r.t.info, p)
	if err != nil {
		return nil, err
	}
	var cp *filter.Request
	if req != nil {
		c := *req
		cp = &c
	}
	return &decoded{r: r, ver: ver, version: rec.Version, req: cp, params: params, src: src, size: plain}, nil
}

// decoded is the plain view of a stored stream.
type decoded struct {
	r       *reversible
	ver     Version
	version int
	req     *filter.Request
	params  map[string]string
	src     filter.Source
	size    int64
}

func (d *decoded) Size() int64 { return d.size }

func (d *decoded) Open(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	if off < 0 || n < 0 || off+n > d.size {
		return nil, fmt.Errorf("wasm filter %q: range [%d, %d) outside %d bytes", d.r.t.info.Name, off, off+n, d.size)
	}
	// The decoders below this one run in the same slot (filter.Scope).
	ctx = filter.Scoped(ctx)
	stored, err := d.src.Open(ctx, 0, d.src.Size())
	if err != nil {
		return nil, err
	}
	out, err := d.ver.Module.Start(ctx, d.r.t.invocation(d.req, "get", d.src.Size(), d.version, d.ver.Deps, d.params), d.r.t.lim, stored)
	if err != nil {
		return nil, errors.Join(err, stored.Close())
	}
	rc := &rangeReader{out: out, stored: stored, name: d.r.t.info.Name, n: n, atEnd: off+n == d.size}
	if _, err := io.CopyN(io.Discard, out, off); err != nil {
		_ = rc.Close()
		return nil, rc.short(err)
	}
	return rc, nil
}

// rangeReader yields n bytes of decoded output. When the range reaches
// the end of the object it also checks that the module produced exactly
// the recorded size: a GET must fail, never return wrong data.
type rangeReader struct {
	out    io.ReadCloser
	stored io.Closer
	name   string
	n      int64
	atEnd  bool
}

func (r *rangeReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		if r.atEnd {
			r.atEnd = false
			var one [1]byte
			if k, err := io.ReadFull(r.out, one[:]); k > 0 {
				return 0, fmt.Errorf("wasm filter %q: decoded more bytes than recorded: %w", r.name, filter.ErrIntegrity)
			} else if err != io.EOF {
				return 0, err
			}
		}
		return 0, io.EOF
	}
	k, err := r.out.Read(p[:min(int64(len(p)), r.n)])
	r.n -= int64(k)
	if err == io.EOF && r.n > 0 {
		return k, r.short(err)
	}
	if err == io.EOF {
		err = nil
	}
	return k, err
}

func (r *rangeReader) short(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("wasm filter %q: decoded fewer bytes than recorded: %w", r.name, filter.ErrIntegrity)
	}
	return err
}

func (r *rangeReader) Close() error {
	return errors.Join(r.out.Close(), r.stored.Close())
}

// counter counts bytes passing through and notes io.EOF.
type counter struct {
	r   io.Reader
	n   int64
	eof bool
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err == io.EOF {
		c.eof = true
	}
	return n, err
}
