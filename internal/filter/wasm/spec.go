package wasm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/meta"
)

// Descriptor is what an administrator uploads with a module: the filter's
// self-description (docs/filters.md). The server assigns the version.
type Descriptor struct {
	Name string `json:"name"`
	// Owner is the tenant whose policies alone may use the filter; empty
	// makes it an administrator's filter, usable by every tenant.
	Owner      string             `json:"owner,omitempty"`
	Methods    []filter.Method    `json:"methods"`
	Stages     []filter.Stage     `json:"stages"`
	Reversible bool               `json:"reversible,omitempty"`
	Params     []filter.ParamSpec `json:"params,omitempty"`
	Doc        string             `json:"doc,omitempty"`
	// Dependencies names the dependency files mounted read-only at
	// /deps/<name> in the module's file system.
	Dependencies []string `json:"dependencies,omitempty"`
}

// maxDescriptor bounds a descriptor's JSON.
const maxDescriptor = 64 << 10

// paramTypes are the parameter types a WASM filter may declare.
var paramTypes = []filter.ParamType{filter.TypeString, filter.TypeInt, filter.TypeBool, filter.TypeEnum,
	filter.TypeSize, filter.TypeRate, filter.TypeDuration, filter.TypePercent}

// ParseDescriptor decodes and validates a descriptor strictly: unknown
// fields, trailing data and invalid values are errors that say which.
func ParseDescriptor(b []byte) (Descriptor, error) {
	var d Descriptor
	if len(b) > maxDescriptor {
		return d, fmt.Errorf("descriptor over %d bytes", maxDescriptor)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return Descriptor{}, fmt.Errorf("descriptor: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Descriptor{}, fmt.Errorf("descriptor: trailing data after the object")
	}
	if err := d.Validate(); err != nil {
		return Descriptor{}, err
	}
	return d, nil
}

// Validate checks a descriptor and puts its lists in canonical form
// (upper-case methods, lower-case stages, no duplicates).
func (d *Descriptor) Validate() error {
	if !meta.ValidFilterName(d.Name) {
		return fmt.Errorf("descriptor: invalid filter name %q: want 1-63 characters [a-z][a-z0-9-_]*", d.Name)
	}
	if d.Name == "dependencies" {
		return fmt.Errorf("descriptor: the filter name %q is reserved", d.Name)
	}
	if len(d.Methods) == 0 {
		return fmt.Errorf("descriptor: methods: at least one of PUT, GET is required")
	}
	for i, m := range d.Methods {
		m = filter.Method(strings.ToUpper(string(m)))
		if m != filter.MethodPut && m != filter.MethodGet {
			return fmt.Errorf("descriptor: methods: %q is not PUT or GET", d.Methods[i])
		}
		d.Methods[i] = m
	}
	d.Methods = compactSorted(d.Methods)
	if d.Reversible && !slices.Contains(d.Methods, filter.MethodPut) {
		return fmt.Errorf("descriptor: a reversible filter transforms PUTs (it is undone on GET): methods must include PUT")
	}
	if len(d.Stages) == 0 {
		return fmt.Errorf("descriptor: stages: at least one of gateway, storage is required")
	}
	for i, s := range d.Stages {
		s = filter.Stage(strings.ToLower(string(s)))
		if s != filter.StageGateway && s != filter.StageStorage {
			return fmt.Errorf("descriptor: stages: %q is not gateway or storage", d.Stages[i])
		}
		d.Stages[i] = s
	}
	// The first stage is a policy's default: keep the given order.
	d.Stages = slices.CompactFunc(d.Stages, func(a, b filter.Stage) bool { return a == b })
	seen := map[string]bool{}
	for i := range d.Params {
		ps := &d.Params[i]
		if !meta.ValidFilterName(ps.Name) {
			return fmt.Errorf("descriptor: parameter name %q: want 1-63 characters [a-z][a-z0-9-_]*", ps.Name)
		}
		if seen[ps.Name] {
			return fmt.Errorf("descriptor: parameter %q declared twice", ps.Name)
		}
		seen[ps.Name] = true
		if !slices.Contains(paramTypes, ps.Type) {
			return fmt.Errorf("descriptor: parameter %s: type %q is not one of %s", ps.Name, ps.Type, typeList())
		}
		if ps.Type == filter.TypeEnum && len(ps.Enum) == 0 {
			return fmt.Errorf("descriptor: parameter %s: an enum needs its values", ps.Name)
		}
		if ps.Default != "" {
			if err := filter.CheckParam(ps, ps.Default); err != nil {
				return fmt.Errorf("descriptor: default of parameter %w", err)
			}
		}
	}
	for _, dep := range d.Dependencies {
		if !meta.ValidFilterName(dep) {
			return fmt.Errorf("descriptor: dependency name %q: want 1-63 characters [a-z][a-z0-9-_]*", dep)
		}
	}
	slices.Sort(d.Dependencies)
	d.Dependencies = slices.Compact(d.Dependencies)
	if d.Owner != "" && !meta.ValidTenantName(d.Owner) {
		return fmt.Errorf("descriptor: invalid owner %q: want a tenant name", d.Owner)
	}
	return nil
}

func typeList() string {
	names := make([]string, len(paramTypes))
	for i, t := range paramTypes {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}

func compactSorted[T ~string](s []T) []T {
	slices.Sort(s)
	return slices.Compact(s)
}

// Spec is what the metadata store holds for a WASM filter (the opaque
// spec of meta.FilterEntry): the descriptor, the current version, and the
// module of every version still kept.
type Spec struct {
	Kind string `json:"kind"` // always "wasm"
	Descriptor
	Version int `json:"version"`
	// Modules are the kept versions' modules, oldest first. A reversible
	// filter keeps every version it ever had, since an object is undone
	// by the module that wrote it; other filters keep only the current.
	Modules []ModuleRef `json:"modules"`
}

// ModuleRef names one version's module blob in the store, and the
// dependency contents the version mounts.
type ModuleRef struct {
	Version int    `json:"version"`
	SHA256  string `json:"sha256"`
	Blob    string `json:"blob"`
	Size    int64  `json:"size"`
	// Deps are the dependency contents the version was created with, and
	// mounts for as long as it is kept: an object a reversible filter
	// wrote is undone with the module and the dictionaries that wrote it.
	// A new content of a dependency is a new version of the filters that
	// declare it. Pinned is false in specs written before versions
	// pinned their dependencies; those mount the current contents.
	Deps   []DepRef `json:"deps,omitempty"`
	Pinned bool     `json:"pinned,omitempty"`
}

// DepRef pins one dependency's content.
type DepRef struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	Blob   string `json:"blob"`
}

// Pins returns the dependency contents the descriptor's dependencies
// have now, from deps (by name); a dependency missing or of another
// tenant is an error.
func Pins(d Descriptor, deps map[string]meta.Dependency) ([]DepRef, error) {
	out := make([]DepRef, 0, len(d.Dependencies))
	for _, name := range d.Dependencies {
		dep, ok := deps[name]
		if !ok {
			return nil, fmt.Errorf("dependency %q does not exist", name)
		}
		if dep.Owner != "" && dep.Owner != d.Owner {
			return nil, fmt.Errorf("dependency %q belongs to tenant %s", name, dep.Owner)
		}
		out = append(out, DepRef{Name: dep.Name, SHA256: dep.SHA256, Blob: dep.Blob})
	}
	return out, nil
}

// DepBlobs lists the dependency blobs the kept versions of s pin.
func (s *Spec) DepBlobs() []string {
	var out []string
	for _, m := range s.Modules {
		for _, d := range m.Deps {
			out = append(out, d.Blob)
		}
	}
	return out
}

// SpecKind is Spec.Kind.
const SpecKind = "wasm"

// ParseSpec decodes a stored spec; nil, false when it is not a WASM
// filter's.
func ParseSpec(b []byte) (*Spec, bool, error) {
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, false, fmt.Errorf("filter spec: %w", err)
	}
	if s.Kind != SpecKind {
		return nil, false, nil
	}
	if s.Version < 1 || !slices.ContainsFunc(s.Modules, func(m ModuleRef) bool { return m.Version == s.Version }) {
		return nil, true, fmt.Errorf("filter spec %q: no module for its version %d", s.Name, s.Version)
	}
	return &s, true, nil
}

// Module returns the ref of version v.
func (s *Spec) Module(v int) (ModuleRef, bool) {
	i := slices.IndexFunc(s.Modules, func(m ModuleRef) bool { return m.Version == v })
	if i < 0 {
		return ModuleRef{}, false
	}
	return s.Modules[i], true
}

// Info is the filter's registry description. Its configuration checks
// parameters as a loaded module's does, but provisions nothing: loading
// the module (newInfo) gives the one that runs it.
func (s *Spec) Info() filter.Info {
	name := s.Name
	return filter.Info{Name: s.Name, Version: s.Version, Kind: SpecKind, Methods: slices.Clone(s.Methods),
		Stages: slices.Clone(s.Stages), Reversible: s.Reversible, Params: slices.Clone(s.Params), Doc: s.Doc, Owner: s.Owner,
		Config: func() filter.Provisioner { return &described{name: name} }}
}
