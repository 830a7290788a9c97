package filter

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// resolveParams checks p against in's parameter specs and returns a copy
// with defaults applied. Decode calls it so that a configuration is never
// built from a value the registry would refuse, whoever configures it: the
// policy checker has checked already, but a test may not have. Values are
// the canonical strings Params documents.
func resolveParams(in *Info, p Params) (Params, error) {
	out := make(Params, len(in.Params))
	for name, v := range p {
		i := slices.IndexFunc(in.Params, func(ps ParamSpec) bool { return ps.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("%s: unknown parameter %q (%s)", in.Name, name, knownParams(in))
		}
		if err := checkParam(&in.Params[i], v); err != nil {
			return nil, fmt.Errorf("%s: %w", in.Name, err)
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

func knownParams(in *Info) string {
	if len(in.Params) == 0 {
		return "it takes none"
	}
	names := make([]string, len(in.Params))
	for i, ps := range in.Params {
		names[i] = ps.Name
	}
	return "known: " + strings.Join(names, ", ")
}

// checkParam validates one canonical value against its spec.
func checkParam(ps *ParamSpec, v string) error {
	var num float64
	switch ps.Type {
	case TypeString:
		return nil
	case TypeBool:
		if v != "true" && v != "false" {
			return fmt.Errorf("%s=%q: want true or false", ps.Name, v)
		}
		return nil
	case TypeEnum:
		if !slices.Contains(ps.Enum, v) {
			return fmt.Errorf("%s=%q: want one of %s", ps.Name, v, strings.Join(ps.Enum, ", "))
		}
		return nil
	case TypeInt, TypeSize, TypeRate:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%s=%q: want %s", ps.Name, v, wantNumber(ps.Type))
		}
		num = float64(n)
	case TypeDuration:
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%s=%q: want a duration such as 300ms", ps.Name, v)
		}
		num = d.Seconds()
	case TypePercent:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
			return fmt.Errorf("%s=%q: want a fraction between 0 and 1", ps.Name, v)
		}
		num = f
	default:
		return fmt.Errorf("%s: parameter type %q is not supported", ps.Name, ps.Type)
	}
	if ps.Max > ps.Min && (num < ps.Min || num > ps.Max) {
		return fmt.Errorf("%s=%s out of range %s..%s", ps.Name, v, formatBound(ps.Min), formatBound(ps.Max))
	}
	return nil
}

func wantNumber(t ParamType) string {
	switch t {
	case TypeSize:
		return "a size in bytes"
	case TypeRate:
		return "a rate in bytes per second"
	default:
		return "an integer"
	}
}

func formatBound(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// CheckRange validates a Source.Open request against a stream's size.
func CheckRange(size, off, n int64) error {
	if off < 0 || n < 0 || off > size || n > size-off {
		return fmt.Errorf("range [%d,+%d) outside the stream's %d bytes", off, n, size)
	}
	return nil
}

// CheckParam validates a canonical value against its spec, as the
// registry does before building an instance; run-time registered filters
// use it to check their declared defaults.
func CheckParam(ps *ParamSpec, v string) error { return checkParam(ps, v) }
