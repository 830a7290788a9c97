package admin

import (
	"context"
	"errors"
	"net/http"

	"github.com/facet-sds/facet/internal/storage/integrity"
)

// ScrubService starts integrity scrubs and reports the current or last
// one. Start's errors wrapping ErrScrubScope answer 404 (no such tenant
// or bucket), integrity.ErrScrubRunning 409.
type ScrubService interface {
	Start(ctx context.Context, tenant, bucket string) (ScrubReport, error)
	Status(ctx context.Context) (ScrubReport, bool)
}

// ScrubReport is the body of POST and GET /scrub.
type ScrubReport = integrity.ScrubReport

// ErrScrubScope reports a scrub scope naming what does not exist.
var ErrScrubScope = errors.New("no such scrub scope")

var errNoScrub = apiErr(http.StatusNotImplemented, "NotImplemented", "this server has no scrubber")

// startScrub starts a scrub of every object, a tenant's (?tenant=) or one
// bucket's (?bucket=), answered 202 with the run's first report.
func (h *handler) startScrub(w http.ResponseWriter, r *http.Request) error {
	if h.scrub == nil {
		return errNoScrub
	}
	q := r.URL.Query()
	rep, err := h.scrub.Start(r.Context(), q.Get("tenant"), q.Get("bucket"))
	switch {
	case errors.Is(err, ErrScrubScope):
		return apiErr(http.StatusNotFound, "NoSuchScrubScope", detail(err, ErrScrubScope))
	case errors.Is(err, integrity.ErrScrubRunning):
		return apiErr(http.StatusConflict, "ScrubRunning", err.Error())
	case err != nil:
		return err
	}
	writeJSON(w, http.StatusAccepted, rep)
	return nil
}

func (h *handler) scrubStatus(w http.ResponseWriter, r *http.Request) error {
	if h.scrub == nil {
		return errNoScrub
	}
	rep, ok := h.scrub.Status(r.Context())
	if !ok {
		return apiErr(http.StatusNotFound, "NoScrub", "no scrub has run on this node since it started")
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
