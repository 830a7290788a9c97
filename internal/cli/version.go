package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/buildinfo"
)

// newVersionCommand is `facet version`: what `facet --version` says, one
// field a line, or JSON.
func newVersionCommand(info buildinfo.Info) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print Facet's version, commit, Go version and build date",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			switch output {
			case "json":
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(info)
			case "text":
				_, err := fmt.Fprintf(w, "version:  %s\ncommit:   %s\ngo:       %s\nbuilt:    %s\n", info.Version, info.Commit, info.GoVersion, info.Date)
				return err
			}
			return fmt.Errorf("-o %q: text or json", output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}
