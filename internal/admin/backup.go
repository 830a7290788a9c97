package admin

import (
	"context"
	"errors"
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

// FsckSource checks the running node's embedded store (GET /fsck): its
// index against its data files and, when verify is set, every data file
// against its checksums. The report is JSON-ready.
type FsckSource interface {
	Fsck(ctx context.Context, verify bool) (any, error)
}

// ErrNoIndex is what a FsckSource returns (wrapped) on a node that keeps
// its objects in a remote store.
var ErrNoIndex = errors.New("no embedded index to check")

func (h *handler) fsck(w http.ResponseWriter, r *http.Request) error {
	if h.fsckSource == nil {
		return apiErr(http.StatusNotImplemented, "NotImplemented", "this server has no consistency check")
	}
	verify := r.URL.Query().Get("verify")
	if verify != "" && verify != "true" && verify != "false" {
		return apiErr(http.StatusBadRequest, "InvalidArgument", "verify: true or false")
	}
	rep, err := h.fsckSource.Fsck(r.Context(), verify == "true")
	if errors.Is(err, ErrNoIndex) {
		return apiErr(http.StatusNotImplemented, "NotImplemented", err.Error())
	} else if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
