package admin

import (
	"context"
	"io"
	"net/http"
	"time"
)

// BackupSource writes a backup archive of the node's metadata (the
// metadata store and, with the embedded backend, the object index) to w.
type BackupSource interface {
	WriteBackup(ctx context.Context, w io.Writer) error
}

var errNoBackup = apiErr(http.StatusNotImplemented, "NotImplemented", "this server makes no backups")

// backup streams the archive (GET /backup). An error after the first
// byte can only cut the stream: the archive is then short, and restore
// refuses it.
func (h *handler) backup(w http.ResponseWriter, r *http.Request) error {
	if h.backups == nil {
		return errNoBackup
	}
	w.Header().Set("Content-Type", "application/x-tar")
	w.Header().Set("Content-Disposition", `attachment; filename="facet-backup-`+time.Now().UTC().Format("20060102T150405Z")+`.tar"`)
	if err := h.backups.WriteBackup(r.Context(), w); err != nil {
		h.log.Error("backup failed", "err", err)
		panic(http.ErrAbortHandler) // the client must not take a cut archive for a whole one
	}
	return nil
}
