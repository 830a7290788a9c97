package cli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/facet-sds/facet/internal/server"
)

// contextFlags are the request-class flags of the roles that serve S3
// requests.
func contextFlags(f *pflag.FlagSet, o *server.ContextOptions) {
	f.StringVar(&o.Controller, "context-controller", "limits", "controller of tenant x class flows: limits (each class at its CONTEXT policy's limit) or priority (SILK-like: background classes get bandwidth only while the foreground is under --context-threshold)")
	f.StringSliceVar(&o.Background, "context-background", nil, "background classes for the priority controller, most preferred first (e.g. flush,compaction)")
	f.Var(rateFlag{&o.Threshold}, "context-threshold", "foreground bandwidth under which background classes get the spare (priority controller)")
	f.Var(rateFlag{&o.Capacity}, "context-capacity", "bandwidth shared by foreground and background classes (priority controller)")
	f.Var(rateFlag{&o.Floor}, "context-floor", "bandwidth background classes keep while the foreground is busy (priority controller; empty: none)")
	f.DurationVar(&o.Period, "context-period", time.Second, "period of the class controller")
}
