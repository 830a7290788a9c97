package admin

import (
	"context"
	"net/http"

	"github.com/facet-sds/facet/internal/block"
)

// VolumeExplainer is the block stage's explain (block.Manager).
type VolumeExplainer interface {
	ExplainVolume(ctx context.Context, name string) (block.VolumeExplanation, error)
}

// explainVolume serves GET /volumes/{volume}/explain: the volume's block
// filters in order and its throttles, each with the policy (or the API)
// it comes from, and the dynamic policies waiting for their trigger.
func (h *handler) explainVolume(w http.ResponseWriter, r *http.Request) error {
	v, err := h.vols()
	if err != nil {
		return err
	}
	ex, ok := v.(VolumeExplainer)
	if !ok {
		return apiErr(http.StatusNotImplemented, "NotImplemented", "this block stage cannot explain volumes")
	}
	out, err := ex.ExplainVolume(r.Context(), r.PathValue("volume"))
	if err != nil {
		return volumeError(err, r)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
