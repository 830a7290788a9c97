package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/backup"
)

// backupCommand is `facet ctl backup`: a backup archive of the server's
// metadata, written durably to a file.
func (o *options) backupCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "backup --out FILE",
		Short: "Save a consistent backup of the server's metadata (metadata store and object index) while it runs; facet restore puts it back",
		Args:  cobra.NoArgs,
		RunE: o.run(func(ctx context.Context, c *client, p *printer, _ []string) error {
			if out == "" {
				return errors.New("--out FILE is required")
			}
			m, err := c.backup(ctx, out)
			if err != nil {
				return err
			}
			return p.print(m, []string{"FILE", "CREATED", "RELEASE", "META RECORDS", "INDEX BYTES"},
				[][]string{{out, stamp(m.Created), m.Release, strconv.Itoa(m.MetaRecords), strconv.FormatInt(m.IndexBytes, 10)}})
		}),
	}
	cmd.Flags().StringVar(&out, "out", "", "file to write the archive to (replaced only once the new one is whole and synced)")
	return cmd
}

// backup downloads GET /backup into path: a temp file beside it, synced,
// checked to hold a manifest, then renamed over path.
func (c *client) backup(ctx context.Context, path string) (backup.Manifest, error) {
	var m backup.Manifest
	req, err := c.request(ctx, http.MethodGet, "/backup", nil)
	if err != nil {
		return m, err
	}
	if c.keys != nil {
		if err := c.keys.sign(req); err != nil {
			return m, err
		}
	}
	// An archive takes as long as it takes: no overall timeout.
	hc := *c.hc
	hc.Timeout = 0
	resp, err := hc.Do(req)
	if err != nil {
		return m, fmt.Errorf("admin API at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return m, c.answerError(resp, raw)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return m, err
	}
	defer os.Remove(tmp.Name()) // fails once renamed
	_, err = io.Copy(tmp, resp.Body)
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		_, err = tmp.Seek(0, io.SeekStart)
	}
	if err == nil {
		m, err = backup.ReadManifest(tmp)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return m, fmt.Errorf("backup to %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return m, err
	}
	return m, nil
}
