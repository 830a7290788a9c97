package policy

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ValueKind is the kind of a metric's values, which decides the units a
// threshold may be written in and the canonical unit it is compared in.
type ValueKind string

// The value kinds, with their canonical units.
const (
	KindCount    ValueKind = "count"    // a plain number
	KindOpsRate  ValueKind = "count/s"  // operations per second: 100, 100/s, 100ops
	KindByteRate ValueKind = "bytes/s"  // bytes per second: 10MB/s, 10MBps
	KindBytes    ValueKind = "bytes"    // bytes: 512KB, 1.5GiB
	KindDuration ValueKind = "duration" // seconds: 300ms, 2s
	KindRatio    ValueKind = "ratio"    // a fraction: 0.3, 30%
)

// unitClass is what a number's unit says it measures.
type unitClass int

const (
	classBare unitClass = iota
	classSize
	classRate
	classDuration
	classPercent
	classOps
	classUnknown
)

func (c unitClass) noun() string {
	switch c {
	case classBare:
		return "a plain number"
	case classSize:
		return "a size"
	case classRate:
		return "a rate"
	case classDuration:
		return "a duration"
	case classPercent:
		return "a percentage"
	case classOps:
		return "an operation rate"
	}
	return "an unknown unit"
}

// sizeUnit returns the multiplier of a lower-cased size unit.
func sizeUnit(u string) (float64, bool) {
	switch u {
	case "b":
		return 1, true
	case "kb":
		return 1e3, true
	case "mb":
		return 1e6, true
	case "gb":
		return 1e9, true
	case "tb":
		return 1e12, true
	case "pb":
		return 1e15, true
	case "kib":
		return 1 << 10, true
	case "mib":
		return 1 << 20, true
	case "gib":
		return 1 << 30, true
	case "tib":
		return 1 << 40, true
	case "pib":
		return 1 << 50, true
	}
	return 0, false
}

// durationUnit converts n in a lower-cased duration unit to seconds;
// sub-second units divide, so that 5us is exactly 5e-6.
func durationUnit(u string, n float64) (float64, bool) {
	switch u {
	case "ns":
		return n / 1e9, true
	case "us", "µs":
		return n / 1e6, true
	case "ms":
		return n / 1e3, true
	case "s":
		return n, true
	case "m":
		return n * 60, true
	case "h":
		return n * 3600, true
	case "d":
		return n * 86400, true
	}
	return 0, false
}

// quantity is a parsed number with a unit, in its class's base unit
// (bytes, bytes/s, seconds, fraction, ops/s).
type quantity struct {
	class unitClass
	value float64
	unit  string // as written
}

// parseQuantity reads digits[.digits][unit]. ok is false when raw does
// not start like a number; an unknown unit gives classUnknown.
func parseQuantity(raw string) (q quantity, ok bool) {
	i := 0
	for i < len(raw) && raw[i] >= '0' && raw[i] <= '9' {
		i++
	}
	if i == 0 {
		return q, false
	}
	if i < len(raw) && raw[i] == '.' {
		j := i + 1
		for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
			j++
		}
		if j == i+1 {
			return q, false
		}
		i = j
	}
	n, err := strconv.ParseFloat(raw[:i], 64)
	if err != nil && !isRangeErr(err) {
		return q, false
	}
	q.unit = raw[i:]
	u := strings.ToLower(q.unit)
	q.class, q.value = classUnknown, n
	switch {
	case u == "":
		q.class = classBare
	case u == "%":
		q.class, q.value = classPercent, n/100
	case u == "ops" || u == "iops" || u == "/s" || u == "ops/s" || u == "op/s":
		q.class = classOps
	default:
		if m, ok := sizeUnit(u); ok {
			q.class, q.value = classSize, n*m
		} else if sec, ok := durationUnit(u, n); ok {
			q.class, q.value = classDuration, sec
		} else if base, rate := strings.CutSuffix(u, "/s"); rate {
			if m, ok := sizeUnit(base); ok {
				q.class, q.value = classRate, n*m
			}
		} else if base, rate := strings.CutSuffix(u, "ps"); rate {
			if m, ok := sizeUnit(base); ok {
				q.class, q.value = classRate, n*m
			}
		}
	}
	return q, true
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// want describes, for messages, what a kind of value looks like.
type want struct {
	noun    string      // "a size such as 512KB"
	accepts []unitClass // classes accepted
}

func wantFor(k ValueKind) want {
	switch k {
	case KindBytes:
		return want{"a size such as 10MB", []unitClass{classSize, classBare}}
	case KindByteRate:
		return want{"a rate such as 10MB/s", []unitClass{classRate, classBare}}
	case KindDuration:
		return want{"a duration such as 300ms", []unitClass{classDuration}}
	case KindRatio:
		return want{"a ratio such as 0.3 or 30%", []unitClass{classPercent, classBare}}
	case KindOpsRate:
		return want{"an operation rate such as 100 or 100/s", []unitClass{classOps, classBare}}
	}
	return want{"a number", []unitClass{classBare}}
}

// unitHelp lists the units a class takes, for "unknown unit" messages.
const unitHelp = "sizes take B, KB, MB, GB, TB, KiB, MiB, GiB, TiB; rates a size unit and /s or ps; durations ns, us, ms, s, m, h, d; percentages %"

// parseKind parses raw as a value of kind k, in k's canonical unit.
// subject names what is being given a value, for messages ("OBJECT_SIZE",
// "metric get_bw", "parameter chunk of filter compression").
func parseKind(raw string, k ValueKind, subject string) (float64, string) {
	w := wantFor(k)
	q, ok := parseQuantity(raw)
	if !ok {
		return 0, fmt.Sprintf("%s wants %s, found %q", subject, w.noun, raw)
	}
	if q.class == classUnknown {
		return 0, fmt.Sprintf("unknown unit %q in %s (%s)", q.unit, raw, unitHelp)
	}
	if math.IsInf(q.value, 0) || q.value > 1e18 || q.class == classDuration && q.value > 9e9 {
		return 0, fmt.Sprintf("%s is too large", raw)
	}
	for _, c := range w.accepts {
		if q.class == c {
			return q.value, ""
		}
	}
	if q.class == classBare && k == KindDuration && q.value == 0 {
		return 0, ""
	}
	if q.class == classBare {
		return 0, fmt.Sprintf("%s wants %s, found %s without a unit", subject, w.noun, raw)
	}
	return 0, fmt.Sprintf("%s wants %s, found %s (%s)", subject, w.noun, raw, q.class.noun())
}

// formatDuration renders seconds as a Go duration.
func formatDuration(sec float64) string {
	return time.Duration(math.Round(sec * 1e9)).String()
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// humanBytes renders a byte count with the largest binary unit that
// divides it, for messages.
func humanBytes(f float64) string {
	n := int64(math.Round(f))
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

func formatInt(f float64) string { return strconv.FormatInt(int64(math.Round(f)), 10) }
