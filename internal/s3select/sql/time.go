package sql

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// tsLayouts are the ISO 8601 forms S3 Select's TO_TIMESTAMP and timestamp
// literals accept (the year-only and year-month forms end in T).
var tsLayouts = []string{
	"2006T",
	"2006-01T",
	"2006-01-02T",
	"2006-01-02",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04:05Z07:00",
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02T15:04",
}

// ParseTimestamp reads an ISO 8601 timestamp; without a zone it is UTC.
func ParseTimestamp(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, l := range tsLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not an ISO 8601 timestamp", s)
}

// formatTime renders t with a TO_STRING pattern (Java DateTimeFormatter
// letters: y M d H h m s S a n X x Z, quoted 'text').
func formatTime(t time.Time, pattern string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(pattern); {
		c := pattern[i]
		if c == '\'' {
			j := strings.IndexByte(pattern[i+1:], '\'')
			if j < 0 {
				return "", fmt.Errorf("unterminated quote in pattern %q", pattern)
			}
			b.WriteString(pattern[i+1 : i+1+j])
			i += j + 2
			continue
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			b.WriteByte(c)
			i++
			continue
		}
		j := i
		for j < len(pattern) && pattern[j] == c {
			j++
		}
		n := j - i
		i = j
		pad := func(v, width int) { b.WriteString(fmt.Sprintf("%0*d", width, v)) }
		switch c {
		case 'y':
			if n == 2 {
				pad(t.Year()%100, 2)
			} else {
				pad(t.Year(), n)
			}
		case 'M':
			switch {
			case n >= 4:
				b.WriteString(t.Month().String())
			case n == 3:
				b.WriteString(t.Month().String()[:3])
			default:
				pad(int(t.Month()), n)
			}
		case 'd':
			pad(t.Day(), n)
		case 'H':
			pad(t.Hour(), n)
		case 'h':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			pad(h, n)
		case 'm':
			pad(t.Minute(), n)
		case 's':
			pad(t.Second(), n)
		case 'S':
			frac := fmt.Sprintf("%09d", t.Nanosecond())
			for len(frac) < n {
				frac += "0"
			}
			b.WriteString(frac[:n])
		case 'n':
			b.WriteString(strconv.Itoa(t.Nanosecond()))
		case 'a':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'X', 'x', 'Z':
			_, off := t.Zone()
			if off == 0 && c == 'X' {
				b.WriteByte('Z')
				break
			}
			sign := '+'
			if off < 0 {
				sign, off = '-', -off
			}
			hh, mm := off/3600, off%3600/60
			switch {
			case n == 1 && c != 'Z':
				fmt.Fprintf(&b, "%c%02d", sign, hh)
				if mm != 0 {
					fmt.Fprintf(&b, "%02d", mm)
				}
			case n == 3 && c != 'Z':
				fmt.Fprintf(&b, "%c%02d:%02d", sign, hh, mm)
			default:
				fmt.Fprintf(&b, "%c%02d%02d", sign, hh, mm)
			}
		default:
			return "", fmt.Errorf("unsupported pattern letter %q", c)
		}
	}
	return b.String(), nil
}

func extract(part string, t time.Time) (int64, bool) {
	switch part {
	case "YEAR":
		return int64(t.Year()), true
	case "MONTH":
		return int64(t.Month()), true
	case "DAY":
		return int64(t.Day()), true
	case "HOUR":
		return int64(t.Hour()), true
	case "MINUTE":
		return int64(t.Minute()), true
	case "SECOND":
		return int64(t.Second()), true
	case "TIMEZONE_HOUR":
		_, off := t.Zone()
		return int64(off / 3600), true
	case "TIMEZONE_MINUTE":
		_, off := t.Zone()
		return int64(off % 3600 / 60), true
	}
	return 0, false
}

func dateAdd(part string, n int64, t time.Time) (time.Time, bool) {
	switch part {
	case "YEAR":
		return t.AddDate(int(n), 0, 0), true
	case "MONTH":
		return t.AddDate(0, int(n), 0), true
	case "DAY":
		return t.AddDate(0, 0, int(n)), true
	case "HOUR":
		return t.Add(time.Duration(n) * time.Hour), true
	case "MINUTE":
		return t.Add(time.Duration(n) * time.Minute), true
	case "SECOND":
		return t.Add(time.Duration(n) * time.Second), true
	}
	return t, false
}

// dateDiff counts whole parts from a to b.
func dateDiff(part string, a, b time.Time) (int64, bool) {
	a, b = a.UTC(), b.UTC()
	switch part {
	case "YEAR", "MONTH":
		months := int64(b.Year()-a.Year())*12 + int64(b.Month()-a.Month())
		// A month is not complete until b reaches a's day and time.
		if months > 0 && b.AddDate(0, -int(months), 0).Before(a) {
			months--
		} else if months < 0 && b.AddDate(0, -int(months), 0).After(a) {
			months++
		}
		if part == "YEAR" {
			return months / 12, true
		}
		return months, true
	case "DAY":
		return int64(b.Sub(a) / (24 * time.Hour)), true
	case "HOUR":
		return int64(b.Sub(a) / time.Hour), true
	case "MINUTE":
		return int64(b.Sub(a) / time.Minute), true
	case "SECOND":
		return int64(b.Sub(a) / time.Second), true
	}
	return 0, false
}
