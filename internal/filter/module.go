package filter

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"time"
)

// A filter is loaded in the manner of Caddy's modules, in three steps
// that run at different times:
//
//  1. Decode: Info.Config returns an empty typed configuration and the
//     policy's canonical parameters are decoded into it once (Configure).
//  2. Validate: a configuration that implements Validator checks every
//     constraint its parameter specs cannot say (gzip levels 1-9 but zstd
//     1-4...). Steps 1 and 2 run when a policy is checked, so a policy that
//     could fail a request for a reason known in advance is refused with
//     the DSL's positioned error.
//  3. Provision: when the policy table compiles, the configuration builds
//     the ready instance the request path calls (Instantiate).
//
// Compile-time guards (var _ filter.Validator = (*compressionConfig)(nil))
// keep each filter's contract visible.

// Provisioner is a filter's decoded configuration: Provision builds a
// ready instance from it. It must not fail for a reason Validate could
// have found; what is left (a key store that is down) is per-environment.
type Provisioner interface {
	Provision(env Env) (Filter, error)
}

// ProvisionFunc is the configuration of a filter that takes no
// parameters: the function builds the instance.
type ProvisionFunc func(env Env) (Filter, error)

// Provision implements Provisioner.
func (f ProvisionFunc) Provision(env Env) (Filter, error) { return f(env) }

// Validator is implemented by configurations with constraints beyond
// their parameter specs. Validate runs when a policy is checked and again
// before every Provision; it reports a fault in one parameter with a
// *ParamError, so the checker can point at that parameter.
type Validator interface {
	Validate() error
}

// ParamError is a Validate error about one parameter.
type ParamError struct {
	Param string
	Msg   string
}

func (e *ParamError) Error() string { return e.Msg }

// Invalid returns a *ParamError about param.
func Invalid(param, format string, args ...any) error {
	return &ParamError{Param: param, Msg: fmt.Sprintf(format, args...)}
}

// Configure decodes p into a new configuration of the filter and
// validates it: what the policy checker runs, and what every instance is
// built from. p holds canonical values (Params); unknown names, values
// outside their spec and Validate's faults are refused.
func (in *Info) Configure(p Params) (Provisioner, error) {
	if in.Config == nil {
		return nil, fmt.Errorf("filter %s has no configuration", in.Name)
	}
	cfg := in.Config()
	if err := Decode(in, p, cfg); err != nil {
		return nil, err
	}
	if v, ok := cfg.(Validator); ok {
		if err := v.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", in.Name, err)
		}
	}
	return cfg, nil
}

// New configures and provisions an instance in one go, for hosts that
// build instances one at a time (the decoders of stored objects, tests).
func (in *Info) New(p Params, env Env) (Filter, error) {
	cfg, err := in.Configure(p)
	if err != nil {
		return nil, err
	}
	return cfg.Provision(env)
}

// ParamsField is the tag value of a Params field that receives every
// resolved parameter (filters whose parameters are declared at run time,
// such as WASM modules).
const ParamsField = "*"

// Decode resolves p against in's parameter specs (defaults applied) and
// stores each value in the field of dst, a pointer to a struct, tagged
// `param:"name"`: a string (string, enum), bool, int or int64 (int, size,
// rate), float64 (percent) or time.Duration (duration). A Params field
// tagged `param:"*"` receives them all. A declared parameter with no
// field is a programming error, reported as an error.
func Decode(in *Info, p Params, dst any) error {
	vals, err := resolveParams(in, p)
	if err != nil {
		return err
	}
	rv := reflect.ValueOf(dst)
	if len(in.Params) == 0 && (rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct) {
		return nil // nothing to store (a ProvisionFunc)
	}
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("filter %s: configuration %T is not a pointer to a struct", in.Name, dst)
	}
	sv := rv.Elem()
	st := sv.Type()
	bound := map[string]bool{}
	all := false
	for i := range st.NumField() {
		name, ok := st.Field(i).Tag.Lookup("param")
		if !ok {
			continue
		}
		fv := sv.Field(i)
		if name == ParamsField {
			if fv.Type() != reflect.TypeFor[Params]() {
				return fmt.Errorf("filter %s: field %s tagged %q is not Params", in.Name, st.Field(i).Name, ParamsField)
			}
			fv.Set(reflect.ValueOf(vals))
			all = true
			continue
		}
		bound[name] = true
		v, set := vals[name]
		if !set {
			continue
		}
		if err := setField(fv, v); err != nil {
			return fmt.Errorf("filter %s: parameter %s=%q: %w", in.Name, name, v, err)
		}
	}
	if !all {
		for _, ps := range in.Params {
			if !bound[ps.Name] {
				return fmt.Errorf("filter %s: parameter %s has no field in %T", in.Name, ps.Name, dst)
			}
		}
	}
	return nil
}

var errFieldType = errors.New("unsupported field type")

func setField(fv reflect.Value, v string) error {
	if fv.Kind() == reflect.Pointer {
		// A pointer field tells "not given" (nil) from a zero value.
		e := reflect.New(fv.Type().Elem())
		if err := setField(e.Elem(), v); err != nil {
			return err
		}
		fv.Set(e)
		return nil
	}
	if fv.Type() == reflect.TypeFor[time.Duration]() {
		d, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		fv.SetInt(int64(d))
		return nil
	}
	switch fv.Kind() {
	case reflect.String:
		fv.SetString(v)
	case reflect.Bool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return err
		}
		fv.SetBool(b)
	case reflect.Int, reflect.Int64, reflect.Int32:
		n, err := strconv.ParseInt(v, 10, fv.Type().Bits())
		if err != nil {
			return err
		}
		fv.SetInt(n)
	case reflect.Float64:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return err
		}
		fv.SetFloat(f)
	default:
		return fmt.Errorf("%w %s", errFieldType, fv.Type())
	}
	return nil
}

// ErrNotHere is wrapped by a Provision error when this process cannot run
// the filter at all (a controller checks and compiles policies naming
// WASM filters but has no runtime): such hosts expect it.
var ErrNotHere = errors.New("the filter does not run in this process")

// NotHere returns an error that reads as formatted and is ErrNotHere: a
// Provision fault of the environment this process lacks (a key provider).
func NotHere(format string, args ...any) error {
	return notHere(fmt.Sprintf(format, args...))
}

type notHere string

func (e notHere) Error() string        { return string(e) }
func (e notHere) Is(target error) bool { return target == ErrNotHere }
