package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite README.md's package table from `go list`")

// The package table in README.md lies between these two lines; the test owns
// everything between them.
const (
	tableBegin = "<!-- packages:begin -->"
	tableEnd   = "<!-- packages:end -->"
	modulePath = "github.com/facet-sds/facet/"
)

// TestPackageTable keeps README.md's package table equal to what `go list`
// says: every package of the module, with the first sentence of its doc
// comment. A package without a doc comment fails the test, because the
// table (and the reader) would have nothing to say about what it owns.
func TestPackageTable(t *testing.T) {
	root := filepath.Join("..", "..")
	out := goList(t, root, "{{.ImportPath}}|{{.Name}}|{{.Doc}}")
	want, undocumented := packageTable(out)
	if len(undocumented) > 0 {
		t.Errorf("packages without a doc comment (add a \"// Package x owns ...\" comment): %s", strings.Join(undocumented, ", "))
	}

	readmePath := filepath.Join(root, "README.md")
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	before, got, after := cutBlock(t, string(readme), tableBegin, tableEnd)
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(readmePath, []byte(before+tableBegin+"\n"+want+tableEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("README.md: package table rewritten")
		return
	}
	t.Errorf("README.md's package table is not what `go list` says; regenerate it with\n\tgo test ./cmd/facet -run TestPackageTable -update\n%s", lineDiff(got, want))
}

// packageTable renders `go list` lines (import path|name|doc) as the
// README's Markdown table, and names the packages with no doc comment.
func packageTable(list string) (table string, undocumented []string) {
	var b strings.Builder
	b.WriteString("| package | what it owns (its doc comment) |\n|---|---|\n")
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		path, rest, _ := strings.Cut(line, "|")
		name, doc, _ := strings.Cut(rest, "|")
		path = strings.TrimPrefix(path, modulePath)
		doc = strings.TrimSpace(doc)
		if doc == "" {
			undocumented = append(undocumented, path)
		}
		// "Package x owns ..." reads as "owns ..." in the row of x.
		for _, lead := range []string{"Package " + name + " ", "Command " + filepath.Base(path) + " "} {
			doc = strings.TrimPrefix(doc, lead)
		}
		doc = strings.ReplaceAll(doc, "|", `\|`)
		fmt.Fprintf(&b, "| `%s` | %s |\n", path, doc)
	}
	return b.String(), undocumented
}

// lineDiff lists the lines only in got (-) and only in want (+), in order:
// enough to see which rows changed without a diff library.
func lineDiff(got, want string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	gotSet, wantSet := in(got), in(want)
	var b strings.Builder
	for _, l := range strings.Split(got, "\n") {
		if !wantSet[l] {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range strings.Split(want, "\n") {
		if !gotSet[l] {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	return b.String()
}

// goList runs `go list -f format` over the module's packages from root.
func goList(t *testing.T, root, format string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH:", err)
	}
	cmd := exec.Command(goBin, "list", "-f", format, "./cmd/...", "./internal/...", "./clients/...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	return string(out)
}

// cutBlock splits text around the lines begin and end, returning what is
// before the begin line (exclusive), between the two, and from end on.
func cutBlock(t *testing.T, text, begin, end string) (before, inside, after string) {
	t.Helper()
	before, rest, ok := strings.Cut(text, begin+"\n")
	if !ok {
		t.Fatalf("README.md has no line %q", begin)
	}
	inside, after, ok = strings.Cut(rest, end)
	if !ok {
		t.Fatalf("README.md has no line %q after %q", end, begin)
	}
	return before, inside, after
}
