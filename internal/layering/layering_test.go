package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const (
	module      = "github.com/facet-sds/facet/"
	floorsBegin = "<!-- floors:begin -->"
	floorsEnd   = "<!-- floors:end -->"
)

// sealed packages may be imported only from a floor above theirs, not by
// their peers: the S3 front end is a consumer of the shared vocabulary,
// never a provider of it.
var sealed = []string{"internal/s3api"}

// mustNotLink says what a package must not link, even indirectly (go list
// -deps): a path prefix, of the module's packages (relative) or of
// third-party modules (absolute).
var mustNotLink = map[string][]string{
	// The metadata store knows nothing of the data path.
	"internal/meta": {"internal/s3api", "internal/filter", "internal/dataplane", "internal/s3select", "github.com/parquet-go/"},
	// The policy language names filters; it does not link their engines,
	// nor the block layer that imports it (block filters reach the checker
	// through policy.BlockFilters).
	"internal/policy": {"internal/s3select", "github.com/parquet-go/", "internal/block",
		"internal/filter/native", "internal/filter/builtin", "internal/filter/wasm"},
	// The filter contract holds no filter.
	"internal/filter": {"internal/s3select", "github.com/parquet-go/", "internal/filter/native"},
	// Workload metrics observe requests through obs; they need neither the
	// front end nor the select engine.
	"internal/metrics": {"internal/s3api", "internal/s3select", "github.com/parquet-go/"},
}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Error      *struct{ Err string }
}

// root is the module's directory, from this package's.
var root = filepath.Join("..", "..")

// list reads the module's packages from `go list`, keyed by path relative
// to the module.
func list(t *testing.T) map[string]pkg {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH:", err)
	}
	cmd := exec.Command(goBin, "list", "-e", "-json=ImportPath,Imports,Deps,Error", "./cmd/...", "./internal/...", "./clients/...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, module)] = p
	}
	if len(pkgs) == 0 {
		t.Fatal("go list listed no packages")
	}
	return pkgs
}

// plan is README.md's floor table: each package's floor, 0 the lowest.
type plan struct {
	floor map[string]int
	names []string // names[floor]
}

func (p plan) describe(path string) string {
	f := p.floor[path]
	return fmt.Sprintf("%s (floor %d, %s)", path, f, p.names[f])
}

// readPlan reads the floor table's rows, "| floor | `pkg`, `pkg` |", top
// floor first. Names are relative to internal/ unless they start with cmd/
// or clients/. A package on two floors is a problem.
func readPlan(t *testing.T) (plan, []string) {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), floorsBegin+"\n")
	if !ok {
		t.Fatalf("README.md has no line %q", floorsBegin)
	}
	table, _, ok := strings.Cut(rest, floorsEnd)
	if !ok {
		t.Fatalf("README.md has no line %q after %q", floorsEnd, floorsBegin)
	}
	type row struct {
		name string
		pkgs []string
	}
	var rows []row
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) != 2 || !strings.Contains(cells[1], "`") {
			continue
		}
		r := row{name: strings.TrimSpace(cells[0])}
		for _, field := range strings.Split(cells[1], ",") {
			name := strings.Trim(strings.TrimSpace(field), "`")
			if !strings.HasPrefix(name, "cmd/") && !strings.HasPrefix(name, "clients/") {
				name = "internal/" + name
			}
			r.pkgs = append(r.pkgs, name)
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		t.Fatalf("README.md's floor table has no rows")
	}
	p := plan{floor: map[string]int{}}
	var problems []string
	for i := len(rows) - 1; i >= 0; i-- { // the table lists the top floor first
		f := len(p.names)
		p.names = append(p.names, rows[i].name)
		for _, name := range rows[i].pkgs {
			if g, dup := p.floor[name]; dup {
				problems = append(problems, fmt.Sprintf("%s is on two floors (%q and %q)", name, p.names[g], p.names[f]))
			}
			p.floor[name] = f
		}
	}
	return p, problems
}

// internal returns the module's packages among paths, relative.
func internal(paths []string) []string {
	var out []string
	for _, p := range paths {
		if rel, ok := strings.CutPrefix(p, module); ok {
			out = append(out, rel)
		}
	}
	return out
}

// sorted returns m's keys in order, so that failures read the same on
// every run.
func sorted[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// links reports whether dep (a full import path) is banned (a relative
// module path or an absolute third-party prefix), itself or below it.
func links(dep, banned string) bool {
	rel := strings.TrimPrefix(dep, module)
	b := strings.TrimSuffix(banned, "/")
	return rel == b || strings.HasPrefix(rel, b+"/")
}

func TestFloorPlan(t *testing.T) {
	pkgs := list(t)
	p, problems := readPlan(t)
	fix := "README.md's floor table (between " + floorsBegin + " and " + floorsEnd + ")"

	t.Run("every package on one floor", func(t *testing.T) {
		for _, pr := range problems {
			t.Errorf("%s: %s", fix, pr)
		}
		for _, path := range sorted(pkgs) {
			if _, ok := p.floor[path]; !ok {
				t.Errorf("%s is on no floor: add it to %s, on the floor of what it does (no lower than what it imports)", path, fix)
			}
		}
		for _, path := range sorted(p.floor) {
			if _, ok := pkgs[path]; !ok {
				t.Errorf("%s names %s, which is not a package: remove it", fix, path)
			}
		}
	})

	t.Run("no import goes up", func(t *testing.T) {
		for _, path := range sorted(pkgs) {
			f, ok := p.floor[path]
			if !ok {
				continue // reported above
			}
			for _, imp := range internal(pkgs[path].Imports) {
				if g, ok := p.floor[imp]; ok && g > f {
					t.Errorf("%s imports %s: a package imports only its own floor or below; move what it needs down (a leaf on the vocabulary floor)", p.describe(path), p.describe(imp))
				}
			}
		}
	})

	t.Run("sealed packages are imported only from above", func(t *testing.T) {
		for _, path := range sorted(pkgs) {
			for _, imp := range internal(pkgs[path].Imports) {
				if slices.Contains(sealed, imp) && p.floor[path] <= p.floor[imp] {
					t.Errorf("%s imports %s: only higher floors (the wiring, the commands) may; take what you need from a vocabulary leaf (s3err, obs, admit, ownership)", p.describe(path), p.describe(imp))
				}
			}
		}
	})

	t.Run("forbidden links", func(t *testing.T) {
		for _, path := range sorted(mustNotLink) {
			pk, ok := pkgs[path]
			if !ok {
				t.Errorf("mustNotLink names %s, which is not a package", path)
				continue
			}
			for _, dep := range pk.Deps {
				for _, b := range mustNotLink[path] {
					if links(dep, b) {
						t.Errorf("%s links %s (see go list -deps ./%s): it must not link %s", path, dep, path, b)
					}
				}
			}
		}
	})
}
