// Package bfilter owns Facet's block filters: transformations of a
// volume's bytes addressed by their offset in the volume (nop, xor,
// bitrev, AES-XTS encryption), their descriptions for the policy checker,
// and the one explicit list of them (Builtin). They are not object
// filters: a block filter sees fixed-size, offset-addressed buffers and
// transforms them in place, so a read of any range can be undone without
// reading its neighbours.
package bfilter

import (
	"fmt"
	"log/slog"
	"sort"

	"github.com/facet-sds/facet/internal/filter"
)

// Filter transforms a volume's bytes in place. b holds the bytes at
// offset off of the volume; the length never changes. Encode runs on the
// way to the backing store, Decode undoes it on the way back.
type Filter interface {
	Encode(off int64, b []byte) error
	Decode(off int64, b []byte) error
}

// Env is what a filter instance may use from its host.
type Env struct {
	Logger *slog.Logger
	Volume string
	// Key returns the volume's 64-byte key (encryption); nil when the
	// host has no master key.
	Key func() ([]byte, error)
}

// Info describes a block filter.
type Info struct {
	Name    string
	Version int
	Params  []filter.ParamSpec
	Doc     string
	// Align is the block size the filter transforms as a unit (1 when
	// any byte range will do). Unaligned writes are read, patched and
	// written whole by the volume.
	Align int
	// Transparent filters leave the stored bytes as they are (nop): they
	// may come and go on a volume that holds data, so a policy with a
	// metric trigger may set them and an open volume takes them at once.
	Transparent bool
	// Config returns a new, empty typed configuration: a pointer to a
	// struct with `param` tags (filter.Decode). It has the life cycle of
	// the object filters' (internal/filter/module.go): decoded and
	// validated when a policy is checked, provisioned when a volume's
	// stack is built.
	Config func() Provisioner
}

// Provisioner is a block filter's decoded configuration.
type Provisioner interface {
	Provision(env Env) (Filter, error)
}

// ProvisionFunc is the configuration of a filter that takes no
// parameters.
type ProvisionFunc func(env Env) (Filter, error)

// Provision implements Provisioner.
func (f ProvisionFunc) Provision(env Env) (Filter, error) { return f(env) }

// Describe returns the description the policy checker validates against.
func (in *Info) Describe() *filter.Info {
	return &filter.Info{Name: in.Name, Version: in.Version, Kind: "block", Reversible: true, Params: in.Params, Doc: in.Doc}
}

// Configure decodes canonical parameters into a new configuration and
// validates it (filter.Validator): what the policy checker runs.
func (in *Info) Configure(p filter.Params) (Provisioner, error) {
	// Parameters the filter does not declare are the checker's to refuse;
	// the stack ignores them, as block filters always have.
	known := filter.Params{}
	for _, ps := range in.Params {
		if v, ok := p[ps.Name]; ok {
			known[ps.Name] = v
		}
	}
	cfg := in.Config()
	if err := filter.Decode(in.Describe(), known, cfg); err != nil {
		return nil, err
	}
	if v, ok := cfg.(filter.Validator); ok {
		if err := v.Validate(); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// Validate is Configure for the checker, which keeps nothing.
func (in *Info) Validate(p filter.Params) error {
	_, err := in.Configure(p)
	return err
}

// New configures and provisions an instance.
func (in *Info) New(p filter.Params, env Env) (Filter, error) {
	cfg, err := in.Configure(p)
	if err != nil {
		return nil, err
	}
	return cfg.Provision(env)
}

// Builtin is the list of block filters, one per file.
func Builtin() []*Info {
	return []*Info{nopInfo(), xorInfo(), bitrevInfo(), encryptionInfo()}
}

// Registry holds block filters by name.
type Registry struct{ byName map[string]*Info }

// NewRegistry returns a registry of infos; a name twice panics.
func NewRegistry(infos ...*Info) *Registry {
	r := &Registry{byName: map[string]*Info{}}
	for _, in := range infos {
		if _, dup := r.byName[in.Name]; dup {
			panic(fmt.Sprintf("block filter %q registered twice", in.Name))
		}
		r.byName[in.Name] = in
	}
	return r
}

// Lookup returns the filter named name.
func (r *Registry) Lookup(name string) (*Info, bool) {
	in, ok := r.byName[name]
	return in, ok
}

// Names lists the filters in name order.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.byName))
	for n := range r.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Stack is filters applied in order on writes and undone in reverse on
// reads.
type Stack struct {
	Filters []Filter
	Names   []string
	// Align is the least common multiple of the filters' alignments.
	Align int
}

// Encode runs every filter in declared order.
func (s *Stack) Encode(off int64, b []byte) error {
	for i, f := range s.Filters {
		if err := f.Encode(off, b); err != nil {
			return fmt.Errorf("block filter %s: %w", s.Names[i], err)
		}
	}
	return nil
}

// Decode undoes them in reverse order.
func (s *Stack) Decode(off int64, b []byte) error {
	for i := len(s.Filters) - 1; i >= 0; i-- {
		if err := s.Filters[i].Decode(off, b); err != nil {
			return fmt.Errorf("block filter %s: %w", s.Names[i], err)
		}
	}
	return nil
}

// Empty reports whether the stack does nothing.
func (s *Stack) Empty() bool { return s == nil || len(s.Filters) == 0 }

// Add appends a filter.
func (s *Stack) Add(name string, f Filter, align int) {
	s.Filters = append(s.Filters, f)
	s.Names = append(s.Names, name)
	if s.Align < 1 {
		s.Align = 1
	}
	if align > 1 {
		s.Align = lcm(s.Align, align)
	}
}

func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}
