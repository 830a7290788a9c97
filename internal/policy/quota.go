package policy

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Quota values: sizes (bytes=1TiB) as everywhere in the language, and
// counts (objects=10M) with a decimal suffix, k, M, G or T, as people say
// "ten million objects". "m" is refused rather than read as a milli- or a
// minute: 10m objects is ambiguous, and quotas are exact.

// countSuffix returns the multiplier of a count's suffix.
func countSuffix(s string) (int64, bool) {
	switch s {
	case "":
		return 1, true
	case "k", "K":
		return 1e3, true
	case "M":
		return 1e6, true
	case "G":
		return 1e9, true
	case "T":
		return 1e12, true
	}
	return 0, false
}

// maxQuota (1 EiB) bounds every quota value, so that sums of them fit an
// int64.
const maxQuota = 1 << 60

// parseCount reads digits and an optional suffix; the message is "" when
// raw is a count.
func parseCount(raw, subject string) (int64, string) {
	i := 0
	for i < len(raw) && raw[i] >= '0' && raw[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Sprintf("%s wants a count such as 1000 or 10M, found %s", subject, foundText(raw))
	}
	mult, ok := countSuffix(raw[i:])
	if !ok {
		return 0, fmt.Sprintf("%s wants a count such as 1000 or 10M (suffixes k, M, G, T), found %s", subject, foundText(raw))
	}
	if i > 19 {
		return 0, fmt.Sprintf("%s is too large", raw)
	}
	n, err := strconv.ParseInt(raw[:i], 10, 64)
	if err != nil || n > maxQuota/mult {
		return 0, fmt.Sprintf("%s is too large", raw)
	}
	return n * mult, ""
}

// ErrBadQuota marks a malformed quota value given to ParseQuotaLimit.
var ErrBadQuota = errors.New("bad quota value")

// ParseQuotaLimit parses the value of one quota field as `facet ctl quota
// set` and the policy language read it: bytes is a size (1TiB, 500GB,
// 4096), the others (objects, buckets, uploads) counts (10M, 1000). 0 is
// allowed (no limit).
func ParseQuotaLimit(field, raw string) (int64, error) {
	subject := "quota " + field
	switch field {
	case "bytes":
		v, msg := parseKind(raw, KindBytes, subject)
		if msg != "" {
			return 0, fmt.Errorf("%w: %s", ErrBadQuota, msg)
		}
		if v != math.Trunc(v) || v > maxQuota {
			return 0, fmt.Errorf("%w: %s is not a whole number of bytes up to 1EiB", ErrBadQuota, raw)
		}
		return int64(v), nil
	case "objects", "buckets", "uploads":
		n, msg := parseCount(strings.TrimSpace(raw), subject)
		if msg != "" {
			return 0, fmt.Errorf("%w: %s", ErrBadQuota, msg)
		}
		return n, nil
	}
	return 0, fmt.Errorf("%w: unknown quota %q (bytes, objects, buckets, uploads)", ErrBadQuota, field)
}
