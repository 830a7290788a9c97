// Package buildinfo owns what the binary knows about its own build: the
// version, commit and build date the Makefile's build target stamps in
// with -ldflags -X, falling back on what the Go toolchain records (module
// version, VCS revision and time) when built otherwise (go build, go
// install). `facet version`, facet_build_info on /metrics and the
// dashboard's footer all read it. It is a leaf: standard library only.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by the Makefile:
//
//	-ldflags "-X github.com/facet-sds/facet/internal/buildinfo.version=v1.2.3 ..."
//
// They are the only package-level variables here, written by the linker
// and never at run time.
var (
	version string
	commit  string
	date    string
)

// Info describes a build.
type Info struct {
	// Version is a release tag or `git describe` of the tree ("dev" when
	// nothing says).
	Version string `json:"version"`
	// Commit is the VCS revision, with "-dirty" when the tree had
	// changes; "unknown" when not recorded.
	Commit string `json:"commit"`
	// GoVersion is the toolchain that built the binary.
	GoVersion string `json:"go_version"`
	// Date is when the binary was built (RFC 3339; for a go build without
	// the Makefile, the commit's time); "unknown" when not recorded.
	Date string `json:"date"`
}

// Get returns the running binary's build information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, commit, date, bi)
}

// resolve prefers what -ldflags stamped, then what the toolchain recorded.
func resolve(version, commit, date string, bi *debug.BuildInfo) Info {
	in := Info{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version()}
	if bi != nil {
		if bi.GoVersion != "" {
			in.GoVersion = bi.GoVersion
		}
		if in.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			in.Version = bi.Main.Version
		}
		var rev, at string
		dirty := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if in.Commit == "" && rev != "" {
			in.Commit = rev
			if dirty {
				in.Commit += "-dirty"
			}
		}
		if in.Date == "" {
			in.Date = at
		}
	}
	if in.Version == "" {
		in.Version = "dev"
	}
	if in.Commit == "" {
		in.Commit = "unknown"
	}
	if in.Date == "" {
		in.Date = "unknown"
	}
	return in
}

// String is the one line `facet --version` prints.
func (i Info) String() string {
	return fmt.Sprintf("facet %s (commit %s, built %s with %s)", i.Version, i.Commit, i.Date, i.GoVersion)
}
