package filter

import (
	"errors"
	"strings"
	"testing"
	"time"
)

type testConfig struct {
	Mode  string        `param:"mode"`
	Level *int          `param:"level"`
	Size  int64         `param:"size"`
	On    bool          `param:"on"`
	Wait  time.Duration `param:"wait"`
	Share float64       `param:"share"`

	validated bool
}

func (c *testConfig) Validate() error {
	c.validated = true
	if c.Level != nil && *c.Level == 7 {
		return Invalid("level", "level %d: not 7", *c.Level)
	}
	return nil
}

func (c *testConfig) Provision(Env) (Filter, error) { return nil, nil }

func testInfo() *Info {
	return &Info{Name: "t", Params: []ParamSpec{
		{Name: "mode", Type: TypeEnum, Enum: []string{"a", "b"}, Default: "a"},
		{Name: "level", Type: TypeInt, Min: 0, Max: 9},
		{Name: "size", Type: TypeSize, Default: "1024"},
		{Name: "on", Type: TypeBool},
		{Name: "wait", Type: TypeDuration, Default: "300ms"},
		{Name: "share", Type: TypePercent},
	}, Config: func() Provisioner { return &testConfig{} }}
}

func TestDecodeAppliesDefaultsAndTypes(t *testing.T) {
	cfg, err := testInfo().Configure(Params{"level": "3", "on": "true", "share": "0.25"})
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.(*testConfig)
	if c.Mode != "a" || c.Level == nil || *c.Level != 3 || c.Size != 1024 || !c.On || c.Wait != 300*time.Millisecond || c.Share != 0.25 || !c.validated {
		t.Fatalf("decoded %+v", c)
	}
	cfg, _ = testInfo().Configure(nil)
	if c := cfg.(*testConfig); c.Level != nil {
		t.Fatalf("an absent parameter without a default decoded to %d", *c.Level)
	}
}

func TestConfigureRefuses(t *testing.T) {
	for want, p := range map[string]Params{
		`t: unknown parameter "x" (known: mode, level, size, on, wait, share)`: {"x": "1"},
		`t: level=10 out of range 0..9`:                                        {"level": "10"},
		`t: mode="c": want one of a, b`:                                        {"mode": "c"},
		`t: level 7: not 7`:                                                    {"level": "7"},
	} {
		_, err := testInfo().Configure(p)
		if err == nil || err.Error() != want {
			t.Errorf("Configure(%v): %v, want %s", p, err, want)
		}
	}
	_, err := testInfo().Configure(Params{"level": "7"})
	var pe *ParamError
	if !errors.As(err, &pe) || pe.Param != "level" {
		t.Fatalf("Validate's fault does not name its parameter: %v", err)
	}
}

// A declared parameter without a field is a programming error, which
// Configure reports rather than dropping the value.
func TestDecodeNeedsAFieldPerParameter(t *testing.T) {
	in := testInfo()
	in.Params = append(in.Params, ParamSpec{Name: "extra", Type: TypeString})
	if _, err := in.Configure(nil); err == nil || !strings.Contains(err.Error(), "parameter extra has no field") {
		t.Fatalf("got %v", err)
	}
	type all struct {
		ProvisionFunc
		P Params `param:"*"`
	}
	var dst all
	if err := Decode(in, Params{"extra": "x"}, &dst); err != nil || dst.P["extra"] != "x" || dst.P["mode"] != "a" {
		t.Fatalf("a * field: %v %v", dst.P, err)
	}
}

func TestProvisionFuncTakesNoParameters(t *testing.T) {
	in := &Info{Name: "p", Config: func() Provisioner {
		return ProvisionFunc(func(Env) (Filter, error) { return nil, errors.New("built") })
	}}
	if _, err := in.New(nil, Env{}); err == nil || err.Error() != "built" {
		t.Fatalf("New: %v", err)
	}
	if _, err := in.New(Params{"x": "1"}, Env{}); err == nil || !strings.Contains(err.Error(), "unknown parameter") {
		t.Fatalf("New with a parameter: %v", err)
	}
}

func TestNotHere(t *testing.T) {
	err := NotHere("%s: no key provider", "encryption")
	if !errors.Is(err, ErrNotHere) || err.Error() != "encryption: no key provider" {
		t.Fatalf("%v", err)
	}
}
