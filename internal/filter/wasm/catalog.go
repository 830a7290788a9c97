package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/meta"
)

// Store is what a Catalog reads from the metadata store: module and
// dependency blobs, and the dependencies' descriptions.
type Store interface {
	GetFilterBlob(ctx context.Context, key string) ([]byte, error)
	ListDependencies(ctx context.Context) ([]meta.Dependency, error)
}

// Catalog turns the WASM filters registered in the metadata store into
// filter descriptions, compiling each module once: a module already
// compiled (same filter, same code) is reused across reloads, and the
// runtime's on-disk compilation cache spares a restart the compile.
// Dependencies are written once per content into a directory of their
// own, mounted read-only into the filters that declare them.
type Catalog struct {
	rt    *Runtime
	store Store
	lim   Limits
	log   *slog.Logger
	dir   string // dependency directories
	temp  bool   // dir was created here and is removed on Close
	grace time.Duration

	mu      sync.Mutex
	modules map[string]*Module // name \x00 sha256 -> compiled
	closed  bool
	retired sync.WaitGroup
}

// CatalogConfig configures a Catalog.
type CatalogConfig struct {
	Runtime *Runtime
	Store   Store
	Limits  Limits
	Logger  *slog.Logger
	// DepsDir holds dependency files; empty means a temporary directory.
	DepsDir string
	// Grace is how long a module no longer registered stays usable for
	// requests that resolved their pipeline before the change (default
	// one minute).
	Grace time.Duration
}

// NewCatalog returns a catalog; Close releases its modules.
func NewCatalog(cfg CatalogConfig) (*Catalog, error) {
	c := &Catalog{rt: cfg.Runtime, store: cfg.Store, lim: cfg.Limits, log: cfg.Logger, dir: cfg.DepsDir, grace: cfg.Grace,
		modules: map[string]*Module{}}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.grace <= 0 {
		c.grace = time.Minute
	}
	if c.dir == "" {
		d, err := os.MkdirTemp("", "facet-wasm-deps-")
		if err != nil {
			return nil, fmt.Errorf("wasm catalog: %w", err)
		}
		c.dir, c.temp = d, true
	} else if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, fmt.Errorf("wasm catalog: %w", err)
	}
	return c, nil
}

// Close releases every module (after in-flight retirements) and, when
// the catalog made it, the dependency directory.
func (c *Catalog) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	mods := c.modules
	c.modules = map[string]*Module{}
	c.mu.Unlock()
	var err error
	for _, m := range mods {
		err = errors.Join(err, m.Close(ctx))
	}
	if c.temp {
		err = errors.Join(err, os.RemoveAll(c.dir))
	}
	return err
}

// Check compiles code as filter name's module and releases it: the
// admin API refuses a module that would not load before storing it.
func (c *Catalog) Check(ctx context.Context, name string, code []byte) error {
	m, err := c.rt.Compile(ctx, name, code)
	if err != nil {
		return err
	}
	return m.Close(ctx)
}

// Load builds the descriptions of the WASM filters among entries. A
// filter that cannot be loaded (a blob missing, a module that no longer
// compiles, an unknown dependency) is left out and reported in the
// joined error; the others load. Entries of other kinds are ignored.
// Modules of filters no longer listed are closed after the grace period.
func (c *Catalog) Load(ctx context.Context, entries []meta.FilterEntry) ([]*filter.Info, error) {
	var deps map[string]meta.Dependency
	var out []*filter.Info
	var errs []error
	used := map[string]bool{}
	for _, e := range entries {
		spec, ok, err := ParseSpec(e.Spec)
		if err != nil {
			errs = append(errs, fmt.Errorf("filter %q: %w", e.Name, err))
			continue
		}
		if !ok {
			continue
		}
		if spec.Name != e.Name {
			errs = append(errs, fmt.Errorf("filter %q: spec names %q", e.Name, spec.Name))
			continue
		}
		if len(spec.Dependencies) > 0 && deps == nil {
			list, err := c.store.ListDependencies(ctx)
			if err != nil {
				return nil, fmt.Errorf("wasm catalog: %w", err)
			}
			deps = map[string]meta.Dependency{}
			for _, d := range list {
				deps[d.Name] = d
			}
		}
		in, keys, err := c.load(ctx, spec, deps)
		for _, k := range keys {
			used[k] = true
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, in)
	}
	c.retire(used)
	return out, errors.Join(errs...)
}

// load builds one filter's description and returns the module keys it
// uses. Each version mounts the dependency contents it pins; a version
// from before pinning mounts the current ones.
func (c *Catalog) load(ctx context.Context, spec *Spec, deps map[string]meta.Dependency) (*filter.Info, []string, error) {
	versions := map[int]Version{}
	var keys []string
	var current []DepRef
	for _, ref := range spec.Modules {
		pins := ref.Deps
		if !ref.Pinned && len(spec.Dependencies) > 0 {
			if current == nil {
				var err error
				if current, err = Pins(spec.Descriptor, deps); err != nil {
					return nil, keys, fmt.Errorf("filter %q: %w", spec.Name, err)
				}
			}
			pins = current
		}
		dir, err := c.depsDir(ctx, pins)
		if err != nil {
			return nil, keys, fmt.Errorf("filter %q version %d: %w", spec.Name, ref.Version, err)
		}
		key := spec.Name + "\x00" + ref.SHA256
		m, err := c.module(ctx, spec.Name, ref, key)
		if err != nil {
			return nil, keys, fmt.Errorf("filter %q version %d: %w", spec.Name, ref.Version, err)
		}
		keys = append(keys, key)
		versions[ref.Version] = Version{Module: m, Deps: dir}
	}
	in, err := newInfo(spec.Info(), versions, c.lim)
	return in, keys, err
}

// module returns the compiled module of ref, compiling it on first use.
func (c *Catalog) module(ctx context.Context, name string, ref ModuleRef, key string) (*Module, error) {
	c.mu.Lock()
	m, ok := c.modules[key]
	c.mu.Unlock()
	if ok {
		return m, nil
	}
	code, err := c.store.GetFilterBlob(ctx, ref.Blob)
	if err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(code); hex.EncodeToString(sum[:]) != ref.SHA256 {
		return nil, fmt.Errorf("module blob %s does not match its digest", ref.Blob)
	}
	start := time.Now()
	m, err = c.rt.Compile(ctx, name, code)
	if err != nil {
		return nil, err
	}
	c.log.Info("wasm filter compiled", "filter", name, "version", ref.Version, "bytes", len(code), "duration", time.Since(start))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		_ = m.Close(ctx)
		return nil, errors.New("catalog closed")
	}
	if prev, ok := c.modules[key]; ok { // compiled concurrently
		_ = m.Close(ctx)
		return prev, nil
	}
	c.modules[key] = m
	return m, nil
}

// retire forgets modules not in used and closes them after the grace
// period, so a request that resolved its pipeline just before the change
// can still start its instance.
func (c *Catalog) retire(used map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, m := range c.modules {
		if used[k] {
			continue
		}
		delete(c.modules, k)
		c.retired.Add(1)
		time.AfterFunc(c.grace, func() {
			defer c.retired.Done()
			_ = m.Close(context.Background())
		})
	}
}

// depsDir writes the dependency contents pins into a directory named by
// them and returns it; "" when there are none. A directory is written
// once (temp + rename) and never changed, so a running request keeps
// reading the files it started with, and versions pinning other contents
// of a dependency get other directories.
func (c *Catalog) depsDir(ctx context.Context, pins []DepRef) (string, error) {
	if len(pins) == 0 {
		return "", nil
	}
	h := sha256.New()
	for _, d := range pins {
		fmt.Fprintf(h, "%s\x00%s\x00", d.Name, d.SHA256)
	}
	dir := filepath.Join(c.dir, hex.EncodeToString(h.Sum(nil))[:32])
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	tmp, err := os.MkdirTemp(c.dir, ".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	for _, d := range pins {
		if !meta.ValidFilterName(d.Name) {
			return "", fmt.Errorf("dependency name %q is not valid", d.Name)
		}
		data, err := c.store.GetFilterBlob(ctx, d.Blob)
		if err != nil {
			return "", fmt.Errorf("dependency %q: %w", d.Name, err)
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != d.SHA256 {
			return "", fmt.Errorf("dependency %q: data does not match its digest", d.Name)
		}
		if err := os.WriteFile(filepath.Join(tmp, d.Name), data, 0o400); err != nil {
			return "", err
		}
	}
	if err := os.Chmod(tmp, 0o500); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(dir); serr == nil { // written concurrently
			return dir, nil
		}
		return "", err
	}
	return dir, nil
}

// BlobKey is the store key of a filter version's module.
func BlobKey(name string, version int) string { return fmt.Sprintf("module/%s/%d", name, version) }

// DependencyBlobKey is the store key of a dependency's data.
func DependencyBlobKey(name, sha string) string { return "dep/" + name + "/" + sha[:min(len(sha), 16)] }

// Digest is the hex SHA-256 of b.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Update returns the spec after registering a new version of prev (nil
// for a new filter) with descriptor d and code, mounting the dependency
// contents pins (Pins), the blob key to store code under, and the module
// blob keys the update no longer needs. nil code keeps the current module
// (a change of the description, or of a dependency's content, only):
// blob is then "". A reversible filter keeps every earlier version's
// module and pinned dependencies, since objects written by them are
// undone with them, and so can never stop being reversible.
func Update(prev *Spec, d Descriptor, code []byte, pins []DepRef) (spec *Spec, blob string, drop []string, err error) {
	spec = &Spec{Kind: SpecKind, Descriptor: d, Version: 1}
	var ref ModuleRef
	if prev != nil {
		if prev.Reversible && !d.Reversible {
			return nil, "", nil, fmt.Errorf("filter %s is reversible: objects written through it are undone by it, so it stays reversible", d.Name)
		}
		spec.Version = prev.Version + 1
		cur, _ := prev.Module(prev.Version)
		ref = cur
		if prev.Reversible {
			spec.Modules = slices.Clone(prev.Modules)
		} else {
			for _, m := range prev.Modules {
				if code != nil || m.Blob != cur.Blob {
					drop = append(drop, m.Blob)
				}
			}
		}
	}
	if code == nil {
		if prev == nil {
			return nil, "", nil, fmt.Errorf("filter %s: a new filter needs its module", d.Name)
		}
		ref.Version = spec.Version
	} else {
		blob = BlobKey(d.Name, spec.Version)
		ref = ModuleRef{Version: spec.Version, SHA256: Digest(code), Blob: blob, Size: int64(len(code))}
	}
	ref.Deps, ref.Pinned = slices.Clone(pins), true
	spec.Modules = append(spec.Modules, ref)
	return spec, blob, drop, nil
}

// Blobs lists every module blob key of spec.
func (s *Spec) Blobs() []string {
	out := make([]string, 0, len(s.Modules))
	for _, m := range s.Modules {
		out = append(out, m.Blob)
	}
	return out
}

// Descriptions loads the registered filters' descriptions without their
// code, for a process that compiles policies but runs no filter (the
// controller role): policies naming WASM filters check and compile there
// as on the gateways. Building an instance fails.
type Descriptions struct{}

// Load implements the policy service's loader.
func (Descriptions) Load(_ context.Context, entries []meta.FilterEntry) ([]*filter.Info, error) {
	var out []*filter.Info
	var errs []error
	for _, e := range entries {
		spec, ok, err := ParseSpec(e.Spec)
		if err != nil {
			errs = append(errs, fmt.Errorf("filter %q: %w", e.Name, err))
			continue
		}
		if !ok {
			continue
		}
		in := spec.Info()
		out = append(out, &in)
	}
	return out, errors.Join(errs...)
}

// described is the configuration of a filter known by its description
// only: its parameters are checked like those of a loaded module, and
// provisioning it fails.
type described struct {
	Params filter.Params `param:"*"`
	name   string
}

func (d *described) Provision(filter.Env) (filter.Filter, error) {
	return nil, fmt.Errorf("wasm filter %q: %w", d.name, filter.ErrNotHere)
}
