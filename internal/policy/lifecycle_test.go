package policy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/block/bfilter"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/filter/builtin"
)

// The filters' life cycle seen from the checker: every constraint a
// filter enforces is refused when a policy is checked, at the parameter,
// and every policy the checker accepts provisions its filters.

func lifecycleVocab() *StaticVocabulary {
	return &StaticVocabulary{
		Filters:     builtin.NewRegistry(),
		Metrics:     DefaultMetrics(),
		ObjectTypes: DefaultObjectTypes(),
		Tenants:     []string{"t1"},
		Volumes:     []string{"v1"},
		Blocks:      testBlockFilters(),
	}
}

// The case: accepted before, it made every PUT of t1 fail.
func TestLevelZeroRefusedAtItsParameter(t *testing.T) {
	const src = "FOR TENANT t1 DO SET compression WITH engine=gzip, level=0"
	_, err := ParseAndCheck("pol", src, lifecycleVocab())
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("accepted, or not a policy error: %v", err)
	}
	col := strings.Index(src, "level=") + 1
	if pe.Line != 1 || pe.Col != col || pe.Msg != "level 0: gzip takes 1-9" {
		t.Fatalf("got %d:%d %q, want 1:%d %q", pe.Line, pe.Col, pe.Msg, col, "level 0: gzip takes 1-9")
	}
	want := fmt.Sprintf("pol:1:%d: level 0: gzip takes 1-9\n%s\n%s^~~~~", col, src, strings.Repeat(" ", col-1))
	if pe.Error() != want {
		t.Fatalf("error reads\n%s\nwant\n%s", pe.Error(), want)
	}
}

// validateCases are the constraints the parameter specs cannot say,
// which each filter's Validate enforces: one violation each, with the
// parameter the error must point at.
var validateCases = []struct {
	filter, with, param, msg string
}{
	{"compression", `engine=gzip, level=0`, "level", "level 0: gzip takes 1-9"},
	{"compression", `engine=gzip, level=10`, "level", "between 0 and 9"},
	{"compression", `engine=zstd, level=5`, "level", "level 5: zstd takes 1-4"},
	{"compression", `level=0`, "level", "level 0: zstd takes 1-4"},
	{"tagging", `regex="(", tag="a=b"`, "regex", "regex: error parsing regexp"},
	{"tagging", `regex="x"`, "regex", "regex= and tag= are both required"},
	{"tagging", `tag="a=b"`, "tag", "regex= and tag= are both required"},
	{"tagging", `regex="x", tag="no-equals"`, "tag", "want NAME=VALUE"},
	{"tagging", `regex="x", tag="Bad Name=1"`, "tag", "want NAME=VALUE"},
	{"metadata_guard", `strip="a*b"`, "strip", "'*' is allowed only at the end"},
	{"metadata_guard", `deny="x:*y*"`, "deny", "'*' is allowed only at the end"},
	{"select", `sql="SELECT * FROM S3Object s", columns="a"`, "sql", "sql= replaces columns= and where="},
	{"select", `sql="SELEC * FRM"`, "sql", ""},
	{"select", `where="s.a = = 1"`, "where", ""},
	{"recycle_bin", `max_time=0`, "max_time", "between"},
	{"xor", `key=0x155`, "key", `xor key "0x155": want one byte`},
	{"xor", `key="zz"`, "key", `xor key "zz": want one byte`},
}

// specViolations returns values that break one parameter's spec.
func specViolations(ps filter.ParamSpec) []string {
	unit := map[filter.ParamType]string{filter.TypeSize: "B", filter.TypeRate: "B/s", filter.TypeDuration: "s", filter.TypePercent: "%"}[ps.Type]
	var out []string
	switch ps.Type {
	case filter.TypeEnum:
		out = append(out, `"bogus"`)
	case filter.TypeBool:
		out = append(out, "maybe")
	case filter.TypeInt:
		out = append(out, "1.5", `"x"`)
	case filter.TypeSize, filter.TypeRate, filter.TypeDuration, filter.TypePercent:
		out = append(out, "12parsecs")
	}
	if ps.Max > ps.Min {
		lo, hi := ps.Min-1, ps.Max+1
		if ps.Type == filter.TypePercent {
			lo, hi = ps.Min*100-1, ps.Max*100+1
		}
		if lo >= 0 {
			out = append(out, strconv.FormatFloat(lo, 'f', -1, 64)+unit)
		}
		out = append(out, strconv.FormatFloat(hi, 'f', -1, 64)+unit)
	}
	return out
}

func targetFor(filterName string, v *StaticVocabulary) string {
	if _, ok := v.Filters.Lookup(filterName); ok {
		return "TENANT t1"
	}
	return "VOLUME v1"
}

// checkRefusedAt asserts src is refused with a positioned error at the
// parameter param (its name or its value).
func checkRefusedAt(t *testing.T, v Vocabulary, src, param, msg string) {
	t.Helper()
	_, err := ParseAndCheck("pol", src, v)
	var pe *Error
	if !errors.As(err, &pe) {
		t.Errorf("%s: accepted, or not a policy error: %v", src, err)
		return
	}
	name := strings.Index(src, " "+param+"=") + 1
	value := name + len(param) + 1
	if name == 0 || int(pe.Pos) != name && int(pe.Pos) != value {
		t.Errorf("%s: refused at column %d (%s), want the parameter %s (column %d or %d)", src, pe.Col, pe.Msg, param, name+1, value+1)
	}
	if !strings.Contains(pe.Msg, msg) {
		t.Errorf("%s: message %q, want it to contain %q", src, pe.Msg, msg)
	}
}

func TestEveryParamConstraintRefusedAtItsParameter(t *testing.T) {
	v := lifecycleVocab()
	infos := map[string]*filter.Info{}
	validates := map[string]bool{}
	for _, in := range builtin.Filters() {
		infos[in.Name] = in
		_, validates[in.Name] = in.Config().(filter.Validator)
	}
	for _, in := range bfilter.Builtin() {
		infos[in.Name+" (block)"] = in.Describe()
		_, validates[in.Name+" (block)"] = in.Config().(filter.Validator)
	}
	// The specs' own constraints: types, enums, bounds.
	for key, in := range infos {
		for _, ps := range in.Params {
			for _, bad := range specViolations(ps) {
				src := fmt.Sprintf("FOR %s DO SET %s WITH %s=%s", targetFor(strings.TrimSuffix(key, " (block)"), v), in.Name, ps.Name, bad)
				if ps.Type == filter.TypeString {
					continue
				}
				checkRefusedAt(t, v, src, ps.Name, "")
			}
		}
	}
	// The constraints only Validate knows.
	covered := map[string]bool{}
	for _, c := range validateCases {
		key := c.filter
		if _, ok := v.Filters.Lookup(c.filter); !ok {
			key += " (block)"
		}
		covered[key] = true
		checkRefusedAt(t, v, fmt.Sprintf("FOR %s DO SET %s WITH %s", targetFor(c.filter, v), c.filter, c.with), c.param, c.msg)
	}
	for key, ok := range validates {
		if ok && !covered[key] {
			t.Errorf("filter %s has a Validate and no case here: add its constraints to validateCases", key)
		}
	}
}

// stringPool holds values for string parameters: plain words, patterns
// good and bad, queries good and bad, tags good and bad.
var stringPool = []string{
	"", "a", "user_id", "a, b", "x-amz-meta-owner", "debug*", "a*b", "(", "^logs/(.*)$", ".*",
	"owner=$1", "kind=log", "no-equals", "Bad Name=1", "s.status = '500'", "s.a = = 1",
	"SELECT * FROM S3Object s", "SELECT s.a FROM S3Object s WHERE s.b > 1", "SELEC * FRM", "0x55", "255", "0x100", "zz",
}

// randomValue returns a DSL literal for ps: mostly plausible values,
// boundaries included, and some that break the spec.
func randomValue(r *rand.Rand, ps filter.ParamSpec) string {
	quote := func(s string) string { return strconv.Quote(s) }
	switch ps.Type {
	case filter.TypeString:
		return quote(stringPool[r.IntN(len(stringPool))])
	case filter.TypeEnum:
		if r.IntN(8) == 0 {
			return quote("bogus")
		}
		return quote(ps.Enum[r.IntN(len(ps.Enum))])
	case filter.TypeBool:
		return []string{"true", "false", "yes", "no", "maybe"}[r.IntN(5)]
	}
	lo, hi := ps.Min, ps.Max
	if hi <= lo {
		lo, hi = 0, 1<<20
	}
	var n float64
	switch r.IntN(4) {
	case 0:
		n = lo
	case 1:
		n = hi
	case 2:
		n = lo - 1 + float64(r.IntN(3))
	default:
		n = lo + float64(r.Int64N(int64(hi-lo)+1))
	}
	if n < 0 {
		n = 0
	}
	switch ps.Type {
	case filter.TypeSize:
		return strconv.FormatFloat(n, 'f', 0, 64) + "B"
	case filter.TypeRate:
		return strconv.FormatFloat(n, 'f', 0, 64) + "B/s"
	case filter.TypeDuration:
		return strconv.FormatFloat(n, 'f', 0, 64) + "s"
	case filter.TypePercent:
		return strconv.FormatFloat(n*100, 'f', 0, 64) + "%"
	}
	return strconv.FormatFloat(n, 'f', 0, 64)
}

type zeroKeys struct{}

func (zeroKeys) CurrentKey(context.Context, string) (string, []byte, error) {
	return "k1", make([]byte, 32), nil
}

func (zeroKeys) Key(context.Context, string, string) ([]byte, error) { return make([]byte, 32), nil }

// Property: every policy the checker accepts provisions its filters, for
// parameters drawn at random (seeded, so a failure replays).
func TestAcceptedPoliciesProvision(t *testing.T) {
	v := lifecycleVocab()
	blocks := bfilter.NewRegistry(bfilter.Builtin()...)
	env := filter.Env{Keys: zeroKeys{}}
	benv := bfilter.Env{Volume: "v1", Key: func() ([]byte, error) { return make([]byte, 64), nil }}
	r := rand.New(rand.NewPCG(19, 2026))
	type subject struct {
		name, target string
		params       []filter.ParamSpec
	}
	var subjects []subject
	for _, in := range builtin.Filters() {
		subjects = append(subjects, subject{in.Name, "TENANT t1", in.Params})
	}
	for _, in := range bfilter.Builtin() {
		subjects = append(subjects, subject{in.Name, "VOLUME v1", in.Params})
	}
	accepted := map[string]int{}
	for _, s := range subjects {
		for range 400 {
			var with []string
			for _, ps := range s.params {
				if r.IntN(2) == 0 {
					with = append(with, ps.Name+"="+randomValue(r, ps))
				}
			}
			src := fmt.Sprintf("FOR %s DO SET %s", s.target, s.name)
			if len(with) > 0 {
				src += " WITH " + strings.Join(with, ", ")
			}
			ps, err := ParseAndCheck("pol", src, v)
			if err != nil {
				continue
			}
			accepted[s.name]++
			a := ps[0].Actions[0]
			if s.target == "VOLUME v1" {
				in, _ := blocks.Lookup(s.name)
				if _, err := in.New(a.Values, benv); err != nil {
					t.Errorf("%s: accepted, but provisioning fails: %v", src, err)
				}
				continue
			}
			if _, err := a.Info.New(a.Values, env); err != nil {
				t.Errorf("%s: accepted, but provisioning fails: %v", src, err)
			}
		}
	}
	for _, s := range subjects {
		if accepted[s.name] == 0 {
			t.Errorf("%s: no generated policy was accepted; the generator misses its valid values", s.name)
		}
	}
}
