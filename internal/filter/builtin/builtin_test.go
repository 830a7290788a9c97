package builtin

import (
	"context"
	"slices"
	"testing"

	"github.com/facet-sds/facet/internal/filter"
)

func TestBuiltinDescriptions(t *testing.T) {
	reg := NewRegistry()
	if got, want := reg.Names(), []string{"caching", "compression", "encryption", "metadata_guard", "noop", "recycle_bin", "select", "tagging"}; !slices.Equal(got, want) {
		t.Fatalf("registry holds %v, want %v", got, want)
	}
	env := filter.Env{Keys: stubKeys{}}
	for _, in := range Filters() {
		if in.Version < 1 || in.Kind != "native" || len(in.Methods) == 0 || len(in.Stages) == 0 || in.Doc == "" || in.Config == nil {
			t.Errorf("%s: incomplete description %+v", in.Name, in)
		}
		for _, ps := range in.Params {
			if ps.Default != "" {
				if err := filter.CheckParam(&ps, ps.Default); err != nil {
					t.Errorf("%s: default of %s refused by its own spec: %v", in.Name, ps.Name, err)
				}
			}
			if ps.Type == filter.TypeEnum && !slices.Contains(ps.Enum, ps.Default) {
				t.Errorf("%s: enum %s defaults outside its values", in.Name, ps.Name)
			}
		}
		// Built with no parameters at all, as the data plane builds
		// decoders, every filter works and keeps its promises.
		f, err := in.New(nil, env)
		if err != nil {
			t.Fatalf("%s: New(nil): %v", in.Name, err)
		}
		if f.Info() != in {
			t.Errorf("%s: instance describes another Info", in.Name)
		}
		if _, ok := f.(filter.Reversible); ok != in.Reversible {
			t.Errorf("%s: Reversible says %v, the instance says %v", in.Name, in.Reversible, ok)
		}
	}
}

// Each call builds new values: registries share no codec pools and a
// test may alter its own without touching another's.
func TestBuiltinReturnsFreshValues(t *testing.T) {
	a, b := Filters(), Filters()
	for i := range a {
		if a[i] == b[i] {
			t.Fatalf("%s: the same *Info returned twice", a[i].Name)
		}
	}
}

// stubKeys gives every tenant the same zero key: enough to build the
// encryption filter.
type stubKeys struct{}

func (stubKeys) CurrentKey(context.Context, string) (string, []byte, error) {
	return "k1", make([]byte, 32), nil
}

func (stubKeys) Key(context.Context, string, string) ([]byte, error) { return make([]byte, 32), nil }
