package wasm

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/policy"
)

// exampleDescriptor declares one parameter of every type a module may
// take, as `facet ctl filter add --param name:type:default` does.
const exampleDescriptor = `{"name": "redact", "methods": ["PUT"], "stages": ["gateway"], "params": [
	{"name": "mode", "type": "enum", "enum": ["mask", "drop"], "default": "mask"},
	{"name": "depth", "type": "int", "min": 1, "max": 8, "default": "2"},
	{"name": "strict", "type": "bool", "default": "false"},
	{"name": "window", "type": "size", "min": 1024, "max": 1048576},
	{"name": "rate", "type": "rate"},
	{"name": "timeout", "type": "duration", "min": 0.1, "max": 60},
	{"name": "share", "type": "percent", "min": 0, "max": 1},
	{"name": "label", "type": "string"}]}`

// registeredExample registers the example as the run-time registry does,
// with a module that is never run: provisioning only binds parameters.
func registeredExample(t *testing.T) *filter.Info {
	t.Helper()
	d, err := ParseDescriptor([]byte(exampleDescriptor))
	if err != nil {
		t.Fatal(err)
	}
	info := filter.Info{Name: d.Name, Version: 1, Methods: d.Methods, Stages: d.Stages, Params: d.Params}
	in, err := newInfo(info, map[int]Version{1: {Module: &Module{name: d.Name}}}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func exampleVocab(in *filter.Info) *policy.StaticVocabulary {
	return &policy.StaticVocabulary{Filters: filter.NewRegistry(in), Tenants: []string{"t1"}}
}

// Each declared constraint is refused when the policy is checked, at the
// parameter.
func TestWasmParamsCheckedAtTheirPosition(t *testing.T) {
	in := registeredExample(t)
	v := exampleVocab(in)
	for _, c := range []struct{ param, value string }{
		{"mode", `"blank"`}, {"depth", "0"}, {"depth", "9"}, {"depth", "1.5"}, {"strict", "maybe"},
		{"window", "1023B"}, {"window", "2MiB"}, {"window", "12"}, {"rate", "5s"},
		{"timeout", "50ms"}, {"timeout", "2m"}, {"share", "150%"},
	} {
		src := fmt.Sprintf("FOR TENANT t1 DO SET redact WITH %s=%s", c.param, c.value)
		_, err := policy.ParseAndCheck("pol", src, v)
		var pe *policy.Error
		if !errors.As(err, &pe) {
			t.Errorf("%s: accepted, or not a policy error: %v", src, err)
			continue
		}
		name := strings.Index(src, " "+c.param+"=") + 1
		if int(pe.Pos) != name && int(pe.Pos) != name+len(c.param)+1 {
			t.Errorf("%s: refused at column %d (%s), not at the parameter", src, pe.Col, pe.Msg)
		}
	}
}

// Property: whatever the checker accepts provisions, with the declared
// defaults applied.
func TestWasmAcceptedParamsProvision(t *testing.T) {
	in := registeredExample(t)
	v := exampleVocab(in)
	r := rand.New(rand.NewPCG(19, 7))
	values := map[string][]string{
		"mode": {`"mask"`, `"drop"`, `"blank"`}, "depth": {"0", "1", "8", "9", "3"}, "strict": {"true", "no", "maybe"},
		"window": {"1KiB", "1023B", "1MiB", "64KB", "2MiB"}, "rate": {"10MB/s", "0B/s", "5s"},
		"timeout": {"100ms", "50ms", "60s", "61s", "1s"}, "share": {"0%", "50%", "100%", "101%"}, "label": {`""`, `"x y"`},
	}
	accepted := 0
	for range 500 {
		var with []string
		for _, ps := range in.Params {
			if r.IntN(2) == 0 {
				vs := values[ps.Name]
				with = append(with, ps.Name+"="+vs[r.IntN(len(vs))])
			}
		}
		src := "FOR TENANT t1 DO SET redact"
		if len(with) > 0 {
			src += " WITH " + strings.Join(with, ", ")
		}
		ps, err := policy.ParseAndCheck("pol", src, v)
		if err != nil {
			continue
		}
		accepted++
		a := ps[0].Actions[0]
		f, err := in.New(a.Values, filter.Env{})
		if err != nil {
			t.Fatalf("%s: accepted, but provisioning fails: %v", src, err)
		}
		got := f.(*transformer).params
		if got["mode"] == "" || got["depth"] == "" {
			t.Fatalf("%s: defaults not applied: %v", src, got)
		}
	}
	if accepted == 0 {
		t.Fatal("no generated policy was accepted")
	}
}
