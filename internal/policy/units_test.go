package policy

import (
	"math/rand/v2"
	"path"
	"strings"
	"testing"
)

func TestParseKind(t *testing.T) {
	tests := []struct {
		raw  string
		kind ValueKind
		want float64
		msg  string
	}{
		{"512KB", KindBytes, 512e3, ""},
		{"512kb", KindBytes, 512e3, ""},
		{"1.5GiB", KindBytes, 1.5 * (1 << 30), ""},
		{"10", KindBytes, 10, ""},
		{"2TiB", KindBytes, 2 << 40, ""},
		{"10MBps", KindByteRate, 10e6, ""},
		{"10MB/s", KindByteRate, 10e6, ""},
		{"1KiB/s", KindByteRate, 1024, ""},
		{"100", KindByteRate, 100, ""},
		{"300ms", KindDuration, 0.3, ""},
		{"2m", KindDuration, 120, ""},
		{"1h", KindDuration, 3600, ""},
		{"5us", KindDuration, 5e-6, ""},
		{"0", KindDuration, 0, ""},
		{"5%", KindRatio, 0.05, ""},
		{"0.3", KindRatio, 0.3, ""},
		{"100", KindOpsRate, 100, ""},
		{"100/s", KindOpsRate, 100, ""},
		{"100ops", KindOpsRate, 100, ""},
		{"3000iops", KindOpsRate, 3000, ""},
		{"7", KindCount, 7, ""},
		{"10MB/s", KindBytes, 0, "x wants a size such as 10MB, found 10MB/s (a rate)"},
		{"10MB", KindByteRate, 0, "x wants a rate such as 10MB/s, found 10MB (a size)"},
		{"5%", KindDuration, 0, "x wants a duration such as 300ms, found 5% (a percentage)"},
		{"5", KindDuration, 0, "x wants a duration such as 300ms, found 5 without a unit"},
		{"5/s", KindBytes, 0, "x wants a size such as 10MB, found 5/s (an operation rate)"},
		{"5ms", KindCount, 0, "x wants a number, found 5ms (a duration)"},
		{"abc", KindCount, 0, `x wants a number, found "abc"`},
		{"5Mb/h", KindByteRate, 0, `unknown unit "Mb/h" in 5Mb/h (` + unitHelp + ")"},
		{"1e400", KindCount, 0, `unknown unit "e400" in 1e400 (` + unitHelp + ")"},
		{"999999999999999999999", KindCount, 0, "999999999999999999999 is too large"},
	}
	for _, tt := range tests {
		got, msg := parseKind(tt.raw, tt.kind, "x")
		if msg != tt.msg || msg == "" && got != tt.want {
			t.Errorf("parseKind(%q, %s) = %v, %q; want %v, %q", tt.raw, tt.kind, got, msg, tt.want, tt.msg)
		}
	}
	if got := humanBytes(64 << 20); got != "64MiB" {
		t.Errorf("humanBytes = %s", got)
	}
	if got := humanBytes(1000); got != "1000B" {
		t.Errorf("humanBytes = %s", got)
	}
}

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"*.log", "a.log", true},
		{"*.log", "var/log/a.log", true}, // '*' crosses '/'
		{"logs/*", "logs/2024/01/x", true},
		{"logs/*.gz", "logs/a/b.gz", true},
		{"logs/*.gz", "logs/a/b.gzip", false},
		{"a?c", "a/c", true}, // so does '?'
		{"?", "é", true},     // one rune
		{"??", "é", false},
		{"*??", "é", false},
		{"[a-c]*", "b/x", true},
		{"[^a-c]*", "b/x", false},
		{"[!a-c]*", "d", true},
		{`\*.log`, "*.log", true},
		{`\*.log`, "a.log", false},
		{"*", "", true},
		{"", "", true},
		{"", "a", false},
		{"a*b*c", "aXXbYYbZZc", true},
		{"a*b*c", "aXXbYYbZZ", false},
		{"[é]", "é", true},
	}
	for _, tt := range tests {
		if err := validGlob(tt.pattern); err != nil {
			t.Errorf("validGlob(%q): %v", tt.pattern, err)
		}
		if got := globMatch(tt.pattern, tt.name); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
	for _, bad := range []string{"[", "[]", "[a", `a\`, "[z-a]", `[\`} {
		if validGlob(bad) == nil {
			t.Errorf("validGlob(%q) accepted a malformed pattern", bad)
		}
	}
}

// TestGlobAgreesWithPathMatch: on names without '/', globMatch is
// path.Match.
func TestGlobAgreesWithPathMatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	atoms := []string{"a", "b", "*", "?", "[ab]", "[^a]", "[a-b]", `\*`, "."}
	for i := 0; i < 20000; i++ {
		var p, n strings.Builder
		for j := rng.IntN(5); j >= 0; j-- {
			p.WriteString(atoms[rng.IntN(len(atoms))])
		}
		for j := rng.IntN(6); j > 0; j-- {
			n.WriteByte("ab.*"[rng.IntN(4)])
		}
		want, err := path.Match(p.String(), n.String())
		if err != nil {
			continue
		}
		if got := globMatch(p.String(), n.String()); got != want {
			t.Fatalf("globMatch(%q, %q) = %v, path.Match says %v", p.String(), n.String(), got, want)
		}
	}
}

func TestMatchType(t *testing.T) {
	pats := normalizePatterns([]string{".pdf", "tar.gz", "image/*", "application/json", " ", "."})
	if len(pats) != 4 || pats[1] != ".tar.gz" {
		t.Fatalf("patterns = %q", pats)
	}
	tests := []struct {
		key, ct string
		want    bool
	}{
		{"a.PDF", "", true},
		{"x/y.tar.gz", "", true},
		{"x.gz", "", false},
		{"x", "image/png", true},
		{"x", " Application/JSON ; charset=utf-8", true},
		{"x", "application/jsonl", false},
		{"pdf", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		if got := matchType(pats, tt.key, tt.ct); got != tt.want {
			t.Errorf("matchType(%q, %q) = %v", tt.key, tt.ct, got)
		}
	}
}

func TestDefaults(t *testing.T) {
	a, b := DefaultMetrics(), DefaultMetrics()
	a[0].Name = "changed"
	if b[0].Name == "changed" {
		t.Error("DefaultMetrics shares its slice")
	}
	seen := map[string]bool{}
	for _, m := range b {
		if seen[m.Name] || m.Unit == "" {
			t.Errorf("metric %+v duplicated or without a unit", m)
		}
		seen[m.Name] = true
	}
	for _, want := range []string{"get_ops", "put_ops", "delete_ops", "list_ops", "head_ops", "ops", "get_bw", "put_bw", "bw", "get_lat", "put_lat", "errors", "compressibility"} {
		if !seen[want] {
			t.Errorf("missing metric %s", want)
		}
	}
	types := DefaultObjectTypes()
	for _, want := range []string{"DOCS", "IMAGES", "VIDEO", "AUDIO", "LOGS", "ARCHIVES", "CODE"} {
		if len(types[want]) == 0 {
			t.Errorf("missing object type %s", want)
		}
	}
	if !matchType(normalizePatterns(types["DOCS"]), "minutes.docx", "") {
		t.Error("DOCS should hold .docx")
	}
}
