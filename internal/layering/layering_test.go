package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/facet-sds/facet/"

// floors is the plan: every package of the module (import path without the
// module prefix) and its floor. A package may import packages on its own
// floor or below, never above.
//
//	0 vocabulary: leaves every floor may share (standard library and
//	  third-party imports only)
//	1 contracts, stores and engines: storage and its backends, meta, the
//	  filter contract and its implementations, S3 Select, SigV4, checksums
//	2 the data path and what steers it: policy, dataplane, qos, flowctx,
//	  metrics, block, the fleet sync
//	3 front ends and the control plane: s3api, admin, ui, control, promexp
//	4 wiring and clients: server, ctl
//	5 commands: cli, bench
//	6 the binary
var floors = map[string]int{
	"clients/go/facetctx":                0,
	"internal/admit":                     0,
	"internal/bench/datagen":             0,
	"internal/bus":                       0,
	"internal/controller":                0,
	"internal/controller/controllertest": 0,
	"internal/keys":                      0,
	"internal/layering":                  0,
	"internal/obs":                       0,
	"internal/ownership":                 0,
	"internal/s3err":                     0,
	"internal/s3select/sql":              0,
	"internal/sysdev":                    0,
	"internal/tlspsk":                    0,

	"internal/block/bfilter":         1,
	"internal/filter":                1,
	"internal/filter/builtin":        1,
	"internal/filter/cache":          1,
	"internal/filter/native":         1,
	"internal/filter/trash":          1,
	"internal/filter/wasm":           1,
	"internal/meta":                  1,
	"internal/meta/redistest":        1,
	"internal/s3api/checksum":        1,
	"internal/s3api/sigv4":           1,
	"internal/s3select":              1,
	"internal/s3select/selectfilter": 1,
	"internal/storage":               1,
	"internal/storage/fs":            1,
	"internal/storage/s3":            1,
	"internal/storage/s3/s3test":     1,
	"internal/storage/storagetest":   1,

	"internal/block":     2,
	"internal/block/nbd": 2,
	"internal/dataplane": 2,
	"internal/fleet":     2,
	"internal/flowctx":   2,
	"internal/metrics":   2,
	"internal/policy":    2,
	"internal/qos":       2,

	"internal/admin":   3,
	"internal/control": 3,
	"internal/promexp": 3,
	"internal/s3api":   3,
	"internal/ui":      3,

	"internal/ctl":    4,
	"internal/server": 4,

	"internal/bench": 5,
	"internal/cli":   5,

	"cmd/facet": 6,
}

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
	// The policy language names filters; it does not link their engines.
	"internal/policy": {"internal/s3select", "github.com/parquet-go/"},
	// Workload metrics observe requests through obs; they need neither the
	// front end nor the select engine.
	"internal/metrics": {"internal/s3api", "internal/s3select", "github.com/parquet-go/"},
}

// waiting are links that issue 19 removes in a part not landed yet: each is
// checked like mustNotLink but skipped, with its reason, while the link is
// still there. Move an entry to mustNotLink once its part lands.
var waiting = []struct{ pkg, banned, reason string }{
	{"internal/policy", "internal/block", "waiting for the filter split: policy/block.go imports internal/block/bfilter"},
}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Error      *struct{ Err string }
}

// list reads the module's packages from `go list`, keyed by relative path.
func list(t *testing.T) map[string]pkg {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH:", err)
	}
	cmd := exec.Command(goBin, "list", "-e", "-json=ImportPath,Imports,Deps,Error", "./cmd/...", "./internal/...", "./clients/...")
	cmd.Dir = filepath.Join("..", "..")
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

func TestFloorPlan(t *testing.T) {
	pkgs := list(t)

	t.Run("complete", func(t *testing.T) {
		for _, p := range sorted(pkgs) {
			if _, ok := floors[p]; ok {
				continue
			}
			t.Errorf("package %s is not in the floor plan: add it to floors in internal/layering/layering_test.go, on the floor of what it does (and at least as high as what it imports)", p)
		}
		for _, p := range sorted(floors) {
			if _, ok := pkgs[p]; ok {
				continue
			}
			t.Errorf("the floor plan names %s, which go list does not know: remove it from floors in internal/layering/layering_test.go", p)
		}
	})

	t.Run("no import goes up", func(t *testing.T) {
		for _, path := range sorted(pkgs) {
			p := pkgs[path]
			f, ok := floors[path]
			if !ok {
				continue // reported by "complete"
			}
			for _, imp := range internal(p.Imports) {
				if g, ok := floors[imp]; ok && g > f {
					t.Errorf("%s (floor %d) imports %s (floor %d): a package may import only its own floor or below; move the shared part down (a leaf on floor 0) instead", path, f, imp, g)
				}
			}
		}
	})

	t.Run("sealed packages are imported only from above", func(t *testing.T) {
		for _, path := range sorted(pkgs) {
			for _, imp := range internal(pkgs[path].Imports) {
				if slices.Contains(sealed, imp) && floors[path] <= floors[imp] {
					t.Errorf("%s (floor %d) imports %s (floor %d): only higher floors (the server, the commands) may import it; take what you need from a floor-0 leaf (s3err, obs, admit, ownership)", path, floors[path], imp, floors[imp])
				}
			}
		}
	})

	t.Run("forbidden links", func(t *testing.T) {
		for _, path := range sorted(mustNotLink) {
			banned := mustNotLink[path]
			p, ok := pkgs[path]
			if !ok {
				t.Errorf("mustNotLink names %s, which go list does not know", path)
				continue
			}
			for _, dep := range p.Deps {
				rel := strings.TrimPrefix(dep, module)
				for _, b := range banned {
					if rel == b || strings.HasPrefix(rel, strings.TrimSuffix(b, "/")+"/") {
						t.Errorf("%s links %s (through its imports; see go list -deps ./%s): it must not link %s", path, dep, path, b)
					}
				}
			}
		}
	})

	t.Run("waiting", func(t *testing.T) {
		for _, w := range waiting {
			for _, dep := range pkgs[w.pkg].Deps {
				rel := strings.TrimPrefix(dep, module)
				if rel == w.banned || strings.HasPrefix(rel, w.banned+"/") {
					t.Skipf("%s links %s: %s", w.pkg, dep, w.reason)
				}
			}
		}
	})
}
