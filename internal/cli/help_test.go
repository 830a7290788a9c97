package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// walk calls f on cmd and every command under it.
func walk(cmd *cobra.Command, f func(*cobra.Command)) {
	f(cmd)
	for _, c := range cmd.Commands() {
		walk(c, f)
	}
}

// No flag usage holds a backquote: pflag takes `word` in a usage as the
// name of the flag's argument, so `--controllers facet controller` read
// as if the boolean took one.
func TestFlagUsagesHaveNoBackquotes(t *testing.T) {
	walk(NewRoot(), func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				t.Errorf("%s --%s: usage %q", c.CommandPath(), f.Name, f.Usage)
			}
		}
		c.LocalFlags().VisitAll(check)
		c.PersistentFlags().VisitAll(check)
	})
}

func TestServeHelpControllers(t *testing.T) {
	out := run(t, "serve", "--help")
	line := ""
	for l := range strings.SplitSeq(out, "\n") {
		if strings.Contains(l, "--controllers") {
			line = l
		}
	}
	if !strings.HasPrefix(strings.TrimSpace(line), "--controllers ") || strings.Contains(line, "--controllers facet") {
		t.Fatalf("%q", line)
	}
}

// run runs the facet command with args and returns what it printed.
func run(t *testing.T, args ...string) string {
	t.Helper()
	root := NewRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("facet %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// facet version and facet --version say the build: version, commit, Go
// version and date.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}, {"version", "-o", "json"}} {
		out := run(t, args...)
		for _, want := range []string{"dev", "go1."} {
			if !strings.Contains(out, want) {
				t.Errorf("facet %s: %q lacks %q", strings.Join(args, " "), out, want)
			}
		}
	}
	if out := run(t, "version"); !strings.Contains(out, "commit:") || !strings.Contains(out, "built:") {
		t.Errorf("%q", out)
	}
	if out := run(t, "version", "-o", "json"); !strings.Contains(out, `"go_version"`) || !strings.Contains(out, `"date"`) {
		t.Errorf("%q", out)
	}
}

// facet bench --help speaks an administrator's language: what each
// benchmark measures, not the figures of the papers it reproduces (those
// are in docs/benchmarks/).
func TestBenchHelpSaysWhatItMeasures(t *testing.T) {
	jargon := []string{"Fig.", "Table 9", "Arctur-like", "O = W", "seeds/", "§", "Crystal's"}
	var bench *cobra.Command
	for _, c := range NewRoot().Commands() {
		if c.Name() == "bench" {
			bench = c
		}
	}
	walk(bench, func(c *cobra.Command) {
		texts := []string{c.Short, c.Long}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) { texts = append(texts, f.Usage) })
		for _, s := range texts {
			for _, j := range jargon {
				if strings.Contains(s, j) {
					t.Errorf("%s: %q says %q", c.CommandPath(), s, j)
				}
			}
		}
	})
	if out := run(t, "bench", "--help"); !strings.Contains(out, "docs/benchmarks/") {
		t.Errorf("bench --help does not say where the references are:\n%s", out)
	}
}
