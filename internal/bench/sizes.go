package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// ParseBytes reads a size such as 4096, 4KiB, 1.5MB, 64MiB or 2GB. SI
// suffixes are powers of 10, IEC ones powers of 2 (KB = 1000, KiB = 1024).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("size %q: not a number of bytes", s)
	}
	mult := map[string]float64{
		"": 1, "b": 1,
		"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	}[strings.ToLower(unit)]
	if mult == 0 {
		return 0, fmt.Errorf("size %q: unknown unit %q", s, unit)
	}
	return int64(math.Round(v * mult)), nil
}

// FormatBytes prints n the way sizes are written in scenarios.
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return strconv.FormatInt(n, 10)
}

// sizeClass returns a class of the sources' mixed-size experiment
// (seeds/001, Fig. 7c): small 8-16 MB, medium 32-64 MB, large 128-256 MB,
// uniform within.
func sizeClass(name string) ([2]int64, bool) {
	switch name {
	case "small":
		return [2]int64{8e6, 16e6}, true
	case "medium":
		return [2]int64{32e6, 64e6}, true
	case "large":
		return [2]int64{128e6, 256e6}, true
	}
	return [2]int64{}, false
}

// SizeDist is an object size distribution.
//
//	fixed:      every object is Size bytes
//	uniform:    uniform in [Min, Max]
//	lognormal:  lognormal with the given Mean and StdDev (in bytes), clamped to [Min, Max] when set
//	class:      one of the sources' classes (small, medium, large), or a mix "small,medium,large"
type SizeDist struct {
	Dist   string `json:"dist" yaml:"dist"`
	Size   string `json:"size,omitempty" yaml:"size,omitempty"`
	Min    string `json:"min,omitempty" yaml:"min,omitempty"`
	Max    string `json:"max,omitempty" yaml:"max,omitempty"`
	Mean   string `json:"mean,omitempty" yaml:"mean,omitempty"`
	StdDev string `json:"stddev,omitempty" yaml:"stddev,omitempty"`
	Class  string `json:"class,omitempty" yaml:"class,omitempty"`
}

// ParseSizeDist reads the one-line form used by flags:
// "4KiB" or "fixed:4KiB", "uniform:1KiB-1MiB", "lognormal:1MB,0.5MB",
// "class:small" or "class:small,medium,large".
func ParseSizeDist(s string) (SizeDist, error) {
	kind, arg, found := strings.Cut(s, ":")
	if !found {
		return SizeDist{Dist: "fixed", Size: s}, nil
	}
	switch kind {
	case "fixed":
		return SizeDist{Dist: "fixed", Size: arg}, nil
	case "uniform":
		lo, hi, ok := strings.Cut(arg, "-")
		if !ok {
			return SizeDist{}, fmt.Errorf("size %q: want uniform:MIN-MAX", s)
		}
		return SizeDist{Dist: "uniform", Min: lo, Max: hi}, nil
	case "lognormal":
		mean, sd, ok := strings.Cut(arg, ",")
		if !ok {
			return SizeDist{}, fmt.Errorf("size %q: want lognormal:MEAN,STDDEV", s)
		}
		return SizeDist{Dist: "lognormal", Mean: mean, StdDev: sd}, nil
	case "class":
		return SizeDist{Dist: "class", Class: arg}, nil
	}
	return SizeDist{}, fmt.Errorf("size %q: unknown distribution %q (fixed, uniform, lognormal, class)", s, kind)
}

// sampler draws sizes; built once from a validated SizeDist.
type sampler struct {
	dist     string
	fixed    int64
	lo, hi   int64
	mu, sig  float64 // lognormal parameters of the underlying normal
	classes  [][2]int64
	min, max int64 // lognormal clamp (0: none)
}

// sampler validates d and returns its sampler.
func (d SizeDist) sampler() (*sampler, error) {
	parse := func(field, v string) (int64, error) {
		if v == "" {
			return 0, fmt.Errorf("size distribution %q needs %s", d.Dist, field)
		}
		return ParseBytes(v)
	}
	s := &sampler{dist: d.Dist}
	var err error
	switch d.Dist {
	case "fixed", "":
		s.dist = "fixed"
		s.fixed, err = parse("size", d.Size)
	case "uniform":
		if s.lo, err = parse("min", d.Min); err == nil {
			s.hi, err = parse("max", d.Max)
		}
		if err == nil && s.hi < s.lo {
			err = fmt.Errorf("uniform sizes: max %s below min %s", d.Max, d.Min)
		}
	case "lognormal":
		var mean, sd int64
		if mean, err = parse("mean", d.Mean); err != nil {
			return nil, err
		}
		if sd, err = parse("stddev", d.StdDev); err != nil {
			return nil, err
		}
		if mean <= 0 {
			return nil, fmt.Errorf("lognormal sizes: mean must be positive")
		}
		// Moments of a lognormal: mean = exp(mu + sig²/2),
		// var = (exp(sig²) - 1) mean².
		cv := float64(sd) / float64(mean)
		s.sig = math.Sqrt(math.Log1p(cv * cv))
		s.mu = math.Log(float64(mean)) - s.sig*s.sig/2
		if d.Min != "" {
			s.min, err = ParseBytes(d.Min)
		}
		if err == nil && d.Max != "" {
			s.max, err = ParseBytes(d.Max)
		}
	case "class":
		if d.Class == "" {
			return nil, fmt.Errorf("class sizes: name a class (small, medium, large)")
		}
		for _, c := range strings.Split(d.Class, ",") {
			r, ok := sizeClass(strings.TrimSpace(c))
			if !ok {
				return nil, fmt.Errorf("size class %q: want small, medium or large", c)
			}
			s.classes = append(s.classes, r)
		}
	default:
		return nil, fmt.Errorf("size distribution %q: want fixed, uniform, lognormal or class", d.Dist)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// sample draws one size with r.
func (s *sampler) sample(r *rand.Rand) int64 {
	switch s.dist {
	case "uniform":
		return s.lo + r.Int64N(s.hi-s.lo+1)
	case "lognormal":
		v := int64(math.Round(math.Exp(s.mu + s.sig*r.NormFloat64())))
		if s.min > 0 {
			v = max(v, s.min)
		}
		if s.max > 0 {
			v = min(v, s.max)
		}
		return v
	case "class":
		c := s.classes[r.IntN(len(s.classes))]
		return c[0] + r.Int64N(c[1]-c[0]+1)
	}
	return s.fixed
}

// mean is the distribution's expected size (for reports and planning).
func (s *sampler) mean() float64 {
	switch s.dist {
	case "uniform":
		return float64(s.lo+s.hi) / 2
	case "lognormal":
		return math.Exp(s.mu + s.sig*s.sig/2)
	case "class":
		var sum float64
		for _, c := range s.classes {
			sum += float64(c[0]+c[1]) / 2
		}
		return sum / float64(len(s.classes))
	}
	return float64(s.fixed)
}
