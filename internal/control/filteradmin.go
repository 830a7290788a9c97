package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/filter/wasm"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/policy"
)

// FilterStore is what run-time filter registration needs from the
// metadata store.
type FilterStore interface {
	GetTenant(ctx context.Context, name string) (meta.Tenant, error)
	GetFilter(ctx context.Context, name string) (meta.FilterEntry, error)
	ListFilters(ctx context.Context) ([]meta.FilterEntry, error)
	PutFilterCode(ctx context.Context, name string, spec json.RawMessage, blobs map[string][]byte, drop []string) (meta.FilterEntry, error)
	DeleteFilterCode(ctx context.Context, name string, drop []string) error
	ListPolicies(ctx context.Context) ([]meta.Policy, error)
	PutDependency(ctx context.Context, d meta.Dependency, data []byte, ch meta.DependencyChange) (meta.Dependency, error)
	GetDependency(ctx context.Context, name string) (meta.Dependency, error)
	ListDependencies(ctx context.Context) ([]meta.Dependency, error)
	DeleteDependency(ctx context.Context, name string, drop []string) error
}

// Checker compiles a module to refuse one that would not load.
type Checker interface {
	Check(ctx context.Context, name string, code []byte) error
}

// FilterAdmin implements the control API's run-time filter registration
// (admin.FilterAdmin): it validates descriptors and modules, refuses
// changes that would break stored policies, stores specs and code in one
// transaction and rebuilds the table at once (other nodes follow through
// the change version).
type FilterAdmin struct {
	svc     *Service
	store   FilterStore
	checker Checker
}

var _ admin.FilterAdmin = (*FilterAdmin)(nil)

// NewFilterAdmin returns the registration service of svc's registry.
func NewFilterAdmin(svc *Service, store FilterStore, checker Checker) *FilterAdmin {
	return &FilterAdmin{svc: svc, store: store, checker: checker}
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", admin.ErrInvalidInput, fmt.Sprintf(format, args...))
}

func conflict(format string, args ...any) error {
	return fmt.Errorf("%w: %s", admin.ErrConflict, fmt.Sprintf(format, args...))
}

// CreateFilter implements admin.FilterAdmin.
func (a *FilterAdmin) CreateFilter(ctx context.Context, descriptor, module []byte) (admin.FilterInfo, error) {
	d, err := wasm.ParseDescriptor(descriptor)
	if err != nil {
		return admin.FilterInfo{}, invalid("%v", err)
	}
	if _, native := a.svc.registry.Lookup(d.Name); native {
		return admin.FilterInfo{}, conflict("filter %s is a native filter", d.Name)
	}
	if _, err := a.store.GetFilter(ctx, d.Name); err == nil {
		return admin.FilterInfo{}, conflict("filter %s already exists; update it instead", d.Name)
	} else if !errors.Is(err, meta.ErrFilterNotFound) {
		return admin.FilterInfo{}, err
	}
	return a.put(ctx, nil, d, module)
}

// UpdateFilter implements admin.FilterAdmin.
func (a *FilterAdmin) UpdateFilter(ctx context.Context, name string, descriptor, module []byte) (admin.FilterInfo, error) {
	e, err := a.store.GetFilter(ctx, name)
	if err != nil {
		return admin.FilterInfo{}, err
	}
	prev, ok, err := wasm.ParseSpec(e.Spec)
	if err != nil || !ok {
		return admin.FilterInfo{}, conflict("filter %s is not a WASM filter this server can update", name)
	}
	d := prev.Descriptor
	if descriptor != nil {
		merged, err := mergeDescriptor(prev.Descriptor, descriptor)
		if err != nil {
			return admin.FilterInfo{}, invalid("descriptor: %v", err)
		}
		if d, err = wasm.ParseDescriptor(merged); err != nil {
			return admin.FilterInfo{}, invalid("%v", err)
		}
		if d.Name != name {
			return admin.FilterInfo{}, invalid("the descriptor names filter %q, the path %q", d.Name, name)
		}
	}
	return a.put(ctx, prev, d, module)
}

// mergeDescriptor lays the fields of an update's descriptor over the
// current one: an update names only what changes.
func mergeDescriptor(cur wasm.Descriptor, update []byte) ([]byte, error) {
	var upd map[string]json.RawMessage
	if err := json.Unmarshal(update, &upd); err != nil {
		return nil, err
	}
	base, err := json.Marshal(cur)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(base, &m); err != nil {
		return nil, err
	}
	for k, v := range upd {
		m[k] = v
	}
	return json.Marshal(m)
}

func (a *FilterAdmin) put(ctx context.Context, prev *wasm.Spec, d wasm.Descriptor, module []byte) (admin.FilterInfo, error) {
	if d.Owner != "" {
		if _, err := a.store.GetTenant(ctx, d.Owner); err != nil {
			return admin.FilterInfo{}, err
		}
	}
	deps := map[string]meta.Dependency{}
	for _, dep := range d.Dependencies {
		got, err := a.store.GetDependency(ctx, dep)
		if err != nil {
			return admin.FilterInfo{}, err
		}
		if got.Owner != "" && got.Owner != d.Owner {
			return admin.FilterInfo{}, invalid("dependency %s belongs to tenant %s; filter %s cannot mount it", dep, got.Owner, d.Name)
		}
		deps[dep] = got
	}
	pins, err := wasm.Pins(d, deps)
	if err != nil {
		return admin.FilterInfo{}, invalid("%v", err)
	}
	if module != nil {
		if err := a.checker.Check(ctx, d.Name, module); err != nil {
			return admin.FilterInfo{}, invalid("%v", err)
		}
	}
	spec, blob, drop, err := wasm.Update(prev, d, module, pins)
	if err != nil {
		return admin.FilterInfo{}, invalid("%v", err)
	}
	info := spec.Info()
	if prev != nil {
		if err := a.stillValid(ctx, d.Name, &info); err != nil {
			return admin.FilterInfo{}, err
		}
		released, err := a.unpinned(ctx, prev.DepBlobs(), map[string]*wasm.Spec{d.Name: spec}, nil)
		if err != nil {
			return admin.FilterInfo{}, err
		}
		drop = append(drop, released...)
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return admin.FilterInfo{}, err
	}
	var blobs map[string][]byte
	if blob != "" {
		blobs = map[string][]byte{blob: module}
	}
	if _, err := a.store.PutFilterCode(ctx, d.Name, raw, blobs, drop); err != nil {
		return admin.FilterInfo{}, err
	}
	if err := a.svc.Reload(ctx); err != nil {
		return admin.FilterInfo{}, fmt.Errorf("filter stored, but the table was not rebuilt: %w", err)
	}
	return admin.FilterInfoFrom(&info), nil
}

// DeleteFilter implements admin.FilterAdmin.
func (a *FilterAdmin) DeleteFilter(ctx context.Context, name string, force bool) error {
	e, err := a.store.GetFilter(ctx, name)
	if err != nil {
		return err
	}
	spec, ok, err := wasm.ParseSpec(e.Spec)
	if err != nil || !ok {
		return conflict("filter %s is not a WASM filter this server can delete", name)
	}
	if spec.Reversible && !force {
		return conflict("filter %s is reversible: objects written through it cannot be read back once it is deleted; delete with force to do it anyway", name)
	}
	if err := a.stillValid(ctx, name, nil); err != nil {
		return err
	}
	released, err := a.unpinned(ctx, spec.DepBlobs(), map[string]*wasm.Spec{name: nil}, nil)
	if err != nil {
		return err
	}
	if err := a.store.DeleteFilterCode(ctx, name, append(spec.Blobs(), released...)); err != nil {
		return err
	}
	return a.svc.Reload(ctx)
}

// stillValid refuses a change to filter name (info nil: its deletion)
// that a stored policy using it would not survive: a policy the table
// then silently left out could drop a compliance filter.
func (a *FilterAdmin) stillValid(ctx context.Context, name string, info *filter.Info) error {
	pols, err := a.store.ListPolicies(ctx)
	if err != nil {
		return err
	}
	st := a.svc.state.Load()
	vocab := a.svc.vocabulary(st.registry, nil)
	vocab.AnyTarget = true
	v := &overlay{StaticVocabulary: vocab, name: name, info: info}
	var users []string
	for _, p := range pols {
		if p.State == meta.PolicyDisabled || !mentions(p.Text, name) {
			continue
		}
		parsed, err := policy.Parse(p.ID, p.Text)
		if err != nil || !usesFilter(parsed, name) {
			continue
		}
		if info == nil {
			users = append(users, p.ID)
			continue
		}
		if err := policy.Check(parsed, v); err != nil {
			return conflict("policy %s uses filter %s and would no longer be valid: %v", p.ID, name, err)
		}
	}
	if len(users) > 0 {
		return conflict("filter %s is used by policies %s; delete them first", name, strings.Join(users, ", "))
	}
	return nil
}

func mentions(text, name string) bool { return strings.Contains(strings.ToLower(text), name) }

func usesFilter(ps []*policy.Policy, name string) bool {
	for _, p := range ps {
		for _, act := range p.Actions {
			if strings.EqualFold(act.Filter, name) {
				return true
			}
		}
	}
	return false
}

// overlay is a vocabulary with one filter replaced (or removed).
type overlay struct {
	*policy.StaticVocabulary
	name string
	info *filter.Info
}

func (o *overlay) Filter(n string) (*filter.Info, bool) {
	if n == o.name {
		return o.info, o.info != nil
	}
	return o.StaticVocabulary.Filter(n)
}

func (o *overlay) FilterNames() []string {
	names := slices.DeleteFunc(o.StaticVocabulary.FilterNames(), func(n string) bool { return n == o.name })
	if o.info != nil {
		names = append(names, o.name)
	}
	return names
}

// PutDependency implements admin.FilterAdmin.
func (a *FilterAdmin) PutDependency(ctx context.Context, d admin.Dependency, data []byte) (admin.Dependency, error) {
	if !meta.ValidFilterName(d.Name) {
		return admin.Dependency{}, invalid("invalid dependency name %q: want 1-63 characters [a-z][a-z0-9-_]*", d.Name)
	}
	if d.Owner != "" {
		if _, err := a.store.GetTenant(ctx, d.Owner); err != nil {
			return admin.Dependency{}, err
		}
	}
	prev, err := a.store.GetDependency(ctx, d.Name)
	exists := err == nil
	if err != nil && !errors.Is(err, meta.ErrDependencyNotFound) {
		return admin.Dependency{}, err
	}
	if exists && prev.Owner != d.Owner {
		if err := a.depUnused(ctx, d.Name, "change its owner"); err != nil {
			return admin.Dependency{}, err
		}
	}
	sum := wasm.Digest(data)
	next := meta.Dependency{Name: d.Name, Owner: d.Owner, Doc: d.Doc, SHA256: sum, Blob: wasm.DependencyBlobKey(d.Name, sum)}
	var ch meta.DependencyChange
	if exists && prev.SHA256 != sum {
		if ch, err = a.repin(ctx, prev, next); err != nil {
			return admin.Dependency{}, err
		}
	}
	got, err := a.store.PutDependency(ctx, next, data, ch)
	if err != nil {
		return admin.Dependency{}, err
	}
	if err := a.svc.Reload(ctx); err != nil {
		return admin.Dependency{}, fmt.Errorf("dependency stored, but the table was not rebuilt: %w", err)
	}
	return depOut(got), nil
}

// ListDependencies implements admin.FilterAdmin.
func (a *FilterAdmin) ListDependencies(ctx context.Context) ([]admin.Dependency, error) {
	ds, err := a.store.ListDependencies(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]admin.Dependency, 0, len(ds))
	for _, d := range ds {
		out = append(out, depOut(d))
	}
	return out, nil
}

// GetDependency implements admin.FilterAdmin.
func (a *FilterAdmin) GetDependency(ctx context.Context, name string) (admin.Dependency, error) {
	d, err := a.store.GetDependency(ctx, name)
	if err != nil {
		return admin.Dependency{}, err
	}
	return depOut(d), nil
}

// DeleteDependency implements admin.FilterAdmin.
func (a *FilterAdmin) DeleteDependency(ctx context.Context, name string) error {
	if _, err := a.store.GetDependency(ctx, name); err != nil {
		return err
	}
	cur, err := a.store.GetDependency(ctx, name)
	if err != nil {
		return err
	}
	if err := a.depUnused(ctx, name, "delete it"); err != nil {
		return err
	}
	// Kept versions of filters that once declared it may still pin its
	// data: then the data stays (only the name goes).
	drop, err := a.unpinned(ctx, []string{cur.Blob}, nil, map[string]string{name: ""})
	if err != nil {
		return err
	}
	if err := a.store.DeleteDependency(ctx, name, drop); err != nil {
		return err
	}
	return a.svc.Reload(ctx)
}

// depUnused refuses to act on a dependency that filters declare.
func (a *FilterAdmin) depUnused(ctx context.Context, name, what string) error {
	fs, err := a.store.ListFilters(ctx)
	if err != nil {
		return err
	}
	var users []string
	for _, e := range fs {
		if spec, ok, _ := wasm.ParseSpec(e.Spec); ok && slices.Contains(spec.Dependencies, name) {
			users = append(users, e.Name)
		}
	}
	if len(users) > 0 {
		return conflict("dependency %s is used by filters %s; update them before you %s", name, strings.Join(users, ", "), what)
	}
	return nil
}

// repin makes a new version of every filter declaring dependency prev,
// mounting its new content next with the same module: versions pin the
// contents they were created with (wasm.ModuleRef.Deps), so objects a
// reversible filter wrote with the old content are undone with it. The
// old content's data is dropped when no kept version pins it.
func (a *FilterAdmin) repin(ctx context.Context, prev, next meta.Dependency) (meta.DependencyChange, error) {
	ch := meta.DependencyChange{Specs: map[string]json.RawMessage{}}
	fs, list, err := a.registered(ctx)
	if err != nil {
		return ch, err
	}
	deps := map[string]meta.Dependency{}
	for _, d := range list {
		deps[d.Name] = d
	}
	deps[next.Name] = next
	changed := map[string]*wasm.Spec{}
	for _, e := range fs {
		spec, ok, err := wasm.ParseSpec(e.Spec)
		if err != nil || !ok || !slices.Contains(spec.Dependencies, next.Name) {
			continue
		}
		pins, err := wasm.Pins(spec.Descriptor, deps)
		if err != nil {
			return ch, conflict("filter %s: %v", e.Name, err)
		}
		ns, _, drop, err := wasm.Update(spec, spec.Descriptor, nil, pins)
		if err != nil {
			return ch, conflict("filter %s: %v", e.Name, err)
		}
		raw, err := json.Marshal(ns)
		if err != nil {
			return ch, err
		}
		ch.Specs[e.Name], changed[e.Name] = raw, ns
		ch.Drop = append(ch.Drop, drop...)
	}
	released, err := a.unpinned(ctx, []string{prev.Blob}, changed, map[string]string{next.Name: next.Blob})
	if err != nil {
		return ch, err
	}
	ch.Drop = append(ch.Drop, released...)
	return ch, nil
}

// registered lists the registered filters and dependencies.
func (a *FilterAdmin) registered(ctx context.Context) ([]meta.FilterEntry, []meta.Dependency, error) {
	fs, err := a.store.ListFilters(ctx)
	if err != nil {
		return nil, nil, err
	}
	deps, err := a.store.ListDependencies(ctx)
	if err != nil {
		return nil, nil, err
	}
	return fs, deps, nil
}

// unpinned returns those of the dependency blobs candidates that no
// kept filter version pins and no dependency holds as its data, once the
// specs in changed (name -> new spec, nil: deleted) and the dependencies
// in depBlobs (name -> data blob, "": deleted) are written.
func (a *FilterAdmin) unpinned(ctx context.Context, candidates []string, changed map[string]*wasm.Spec, depBlobs map[string]string) ([]string, error) {
	if len(candidates) == 0 {
		return nil, nil
	}
	fs, list, err := a.registered(ctx)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	for _, e := range fs {
		spec, ok, _ := wasm.ParseSpec(e.Spec)
		if ns, isChanged := changed[e.Name]; isChanged {
			spec, ok = ns, ns != nil
		}
		if ok {
			for _, b := range spec.DepBlobs() {
				used[b] = true
			}
		}
	}
	for _, d := range list {
		if _, isChanged := depBlobs[d.Name]; !isChanged {
			used[d.Blob] = true
		}
	}
	for _, b := range depBlobs {
		used[b] = true
	}
	var out []string
	used[""] = true
	for _, b := range slices.Compact(slices.Sorted(slices.Values(candidates))) {
		if !used[b] {
			out = append(out, b)
		}
	}
	return out, nil
}

func depOut(d meta.Dependency) admin.Dependency {
	return admin.Dependency{Name: d.Name, Owner: d.Owner, Doc: d.Doc, SHA256: d.SHA256, Size: d.Size, Created: d.Created, Updated: d.Updated}
}
