package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/ctl"
	"github.com/facet-sds/facet/internal/server"
)

// newFsckCommand is `facet fsck`: the offline consistency check of a
// stopped node's embedded store, with --repair.
func newFsckCommand() *cobra.Command {
	var (
		dataDir, output string
		repair          bool
	)
	cmd := &cobra.Command{
		Use:   "fsck",
		Short: "Check that a stopped node's object index and data files agree, every data file read through its checksums; --repair removes what is safe to remove; exits 1 on damage",
		Long: "fsck walks the object index of the embedded store in --data (objects, versions, delete markers, uploads and their parts), checks that every data file exists with the recorded size and passes its checksums, " +
			"that version chains are well made and parts belong to an upload, then looks for files no record refers to.\n" +
			"Leftovers of interrupted writes (temp files, unreferenced files) are reported but are not damage: facet serve removes them at start.\n" +
			"--repair removes leftovers and parts of uploads that no longer exist; damaged objects are only reported (delete them, or put their files back from a copy).\n" +
			"A running node is checked with facet ctl fsck.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("-o %q: table or json", output)
			}
			rep, err := server.Fsck(cmd.Context(), dataDir, repair)
			if err != nil {
				return err
			}
			if err := ctl.PrintCheckReport(cmd.OutOrStdout(), output == "json", rep); err != nil {
				return err
			}
			if rep.Damage > 0 {
				return fmt.Errorf("%d finding(s) of damage", rep.Damage)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data", "./data", "data directory")
	f.BoolVar(&repair, "repair", false, "remove leftovers of interrupted writes and parts of uploads that no longer exist")
	f.StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}
