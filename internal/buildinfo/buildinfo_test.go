package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}}
	// What -ldflags stamps wins.
	if got := resolve("v1.2.3", "deadbeef", "2026-11-27T00:00:00Z", bi); got != (Info{"v1.2.3", "deadbeef", "go1.99", "2026-11-27T00:00:00Z"}) {
		t.Errorf("stamped: %+v", got)
	}
	// Otherwise the toolchain's VCS stamp.
	if got := resolve("", "", "", bi); got != (Info{"dev", "abc123-dirty", "go1.99", "2026-01-02T03:04:05Z"}) {
		t.Errorf("vcs: %+v", got)
	}
	// A module version from go install.
	bi = &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "v0.4.0"}}
	if got := resolve("", "", "", bi); got != (Info{"v0.4.0", "unknown", "go1.99", "unknown"}) {
		t.Errorf("module: %+v", got)
	}
	if got := resolve("", "", "", nil); got.Version != "dev" || got.GoVersion == "" {
		t.Errorf("nothing: %+v", got)
	}
	if s := Get().String(); !strings.HasPrefix(s, "facet ") || !strings.Contains(s, "go1.") {
		t.Errorf("String: %q", s)
	}
}
