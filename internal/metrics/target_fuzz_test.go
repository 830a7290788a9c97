package metrics

import "testing"

// FuzzParseTarget: whatever ParseTarget accepts prints back to itself and
// parses to the same target.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"tenant:t1", "bucket:t1/b1", "object:t1/b1/a/b", "volume:v1", "volume:", "volume:a/b", "x:y", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := ParseTarget(s)
		if err != nil {
			return
		}
		if tg.String() != s {
			t.Fatalf("ParseTarget(%q).String() = %q", s, tg.String())
		}
		again, err := ParseTarget(tg.String())
		if err != nil || again != tg {
			t.Fatalf("%q: again %+v %v", s, again, err)
		}
	})
}
