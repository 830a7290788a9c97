package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/server"
)

// newRestoreCommand is `facet restore`: a backup archive (facet ctl
// backup) put back into a stopped node's stores.
func newRestoreCommand() *cobra.Command {
	var (
		in, dataDir, metaURL, output string
		force                        bool
	)
	cmd := &cobra.Command{
		Use:   "restore --in FILE",
		Short: "Put a backup archive (facet ctl backup) back into the metadata store and object index of a stopped Facet",
		Long: "restore loads the archive's metadata records into the metadata store (--meta, or the embedded file in --data) and, when the archive holds one, " +
			"its object index into --data/objects. Stores that hold anything are refused unless --force, which replaces them.\n" +
			"The master key is not in the archive: the restored store opens only with the key it was backed up under (--data/master.key or FACET_MASTER_KEY).\n" +
			"Data files are not in the archive either; see docs/backup.md for the whole procedure.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if in == "" {
				return errors.New("--in FILE is required")
			}
			if output != "text" && output != "json" {
				return fmt.Errorf("-o %q: text or json", output)
			}
			f, err := os.Open(in)
			if err != nil {
				return err
			}
			defer f.Close()
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			m, err := server.RestoreBackup(cmd.Context(), f, dataDir, metaURL, force, logger)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if output == "json" {
				return json.NewEncoder(w).Encode(m)
			}
			fmt.Fprintf(w, "restored %d metadata records", m.MetaRecords)
			if m.Index {
				fmt.Fprintf(w, " and an object index of %d bytes", m.IndexBytes)
			}
			fmt.Fprintf(w, " from a backup made %s by Facet %s\n", m.Created.Format("2006-01-02 15:04:05Z"), m.Release)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&in, "in", "", "the archive, as written by facet ctl backup --out")
	f.StringVar(&dataDir, "data", "./data", "data directory")
	f.StringVar(&metaURL, "meta", os.Getenv("FACET_META"), "metadata store, as for facet serve --meta (empty: the embedded file in --data)")
	f.BoolVar(&force, "force", false, "replace stores that hold records")
	f.StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}
