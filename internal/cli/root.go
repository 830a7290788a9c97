// Package cli owns Facet's command line: the cobra command tree and the
// loading of configuration from flags, FACET_* environment variables and
// an optional YAML file, in that order of precedence.
package cli

import (
	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/buildinfo"
	"github.com/facet-sds/facet/internal/ctl"
)

// NewRoot returns the `facet` command with every subcommand.
func NewRoot() *cobra.Command {
	info := buildinfo.Get()
	root := &cobra.Command{
		Use:           "facet",
		Short:         "Facet: software-defined storage for multi-tenant object and block storage",
		Version:       info.String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(newServeCommand(), newBenchCommand(), ctl.NewCommand())
	root.AddCommand(newBusCommand())
	root.AddCommand(newControllerCommand())
	root.AddCommand(newBlockCommand())
	root.AddCommand(newGatewayCommand())
	root.AddCommand(newVersionCommand(info))
	root.AddCommand(newMigrateCommand(), newRestoreCommand(), newFsckCommand())
	return root
}
