package qos

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// rateUnits are the byte units of ParseRate, decimal and binary.
var rateUnits = map[string]float64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// ParseRate reads a byte rate as the DSL writes it ("80MB/s", "1.5GiB/s",
// "10MBps", or bare bytes per second) into bytes per second.
func ParseRate(s string) (float64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(t, "/s")
	if strings.HasSuffix(t, "ps") {
		t = strings.TrimSuffix(t, "ps")
	}
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], t[i:]
	mult, ok := rateUnits[unit]
	if !ok || num == "" {
		return 0, fmt.Errorf("qos: rate %q: want a number and a unit such as 80MB/s", s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(f*mult, 0) {
		return 0, fmt.Errorf("qos: rate %q: want a number and a unit such as 80MB/s", s)
	}
	return f * mult, nil
}

// FormatRate writes bytes/s the way ParseRate reads it, in MB/s.
func FormatRate(r float64) string {
	if math.IsInf(r, 1) || r <= 0 {
		return "unlimited"
	}
	return strconv.FormatFloat(r/1e6, 'f', -1, 64) + "MB/s"
}
