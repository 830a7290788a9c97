package cli

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/server"
)

// newMigrateCommand is `facet migrate`: what a data directory's stores
// hold and what this binary would migrate, or the migration itself.
func newMigrateCommand() *cobra.Command {
	var (
		dataDir, metaURL, output string
		dryRun                   bool
	)
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Check the format of a data directory's stores and migrate them to this binary's (facet serve does so at start)",
		Long: "migrate reports the format version of the metadata store and of the embedded object index, and the steps that take each to the format this binary writes.\n" +
			"Without --dry-run it runs them, as `facet serve` does when it starts; a store written by a newer release is refused and left unchanged.\n" +
			"Stop the Facet that holds the data directory first.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" {
				return fmt.Errorf("-o %q: text or json", output)
			}
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			reps, err := server.Migrate(cmd.Context(), dataDir, metaURL, dryRun, logger)
			w := cmd.OutOrStdout()
			if output == "json" {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				if eerr := enc.Encode(reps); eerr != nil {
					return eerr
				}
				return err
			}
			for _, r := range reps {
				switch {
				case !r.Exists:
					fmt.Fprintf(w, "%s: none yet (created at format %d)\n", r.Store, r.Current)
				case r.Error != "":
					fmt.Fprintf(w, "%s: format %d: refused\n", r.Store, r.Stored)
				case len(r.Steps) == 0:
					fmt.Fprintf(w, "%s: format %d, current\n", r.Store, r.Stored)
				default:
					verb := "migrated"
					if dryRun {
						verb = "would migrate"
					}
					fmt.Fprintf(w, "%s: format %d, %s to %d:\n", r.Store, r.Stored, verb, r.Current)
					for _, s := range r.Steps {
						fmt.Fprintf(w, "  %s\n", s)
					}
				}
			}
			if dryRun && err == nil {
				fmt.Fprintln(w, "dry run: nothing changed")
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data", "./data", "data directory")
	f.StringVar(&metaURL, "meta", os.Getenv("FACET_META"), "metadata store, as for facet serve --meta (empty: the embedded file in --data)")
	f.BoolVar(&dryRun, "dry-run", false, "report what would be migrated and change nothing")
	f.StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}
