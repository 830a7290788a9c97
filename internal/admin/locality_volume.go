package admin

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"

	"github.com/facet-sds/facet/internal/block"
	"github.com/facet-sds/facet/internal/sysdev"
)

// VolumeLocality is the body of GET /volumes/{volume}/locality: the stripe
// layout of a block volume and where each member's bytes are. Byte off of
// the volume is in member (off/stripe_unit) mod width.
type VolumeLocality struct {
	Volume     string         `json:"volume"`
	Tenant     string         `json:"tenant"`
	Node       string         `json:"node"`
	Size       int64          `json:"size"`
	Class      string         `json:"class"`
	StripeUnit int64          `json:"stripe_unit"`
	Width      int            `json:"width"`
	Members    []VolumeMember `json:"members"`
}

// VolumeMember is one stripe member: its pool, its sparse file and the
// mount and device holding it.
type VolumeMember struct {
	Index    int    `json:"index"`
	Pool     string `json:"pool"`
	PoolDir  string `json:"pool_dir"`
	Path     string `json:"path"`
	Capacity int64  `json:"capacity"`
	// Exists is false until the volume is first opened (its files are
	// created sparse then); FS then describes the nearest existing
	// directory on the way to Path.
	Exists bool              `json:"exists"`
	FS     *sysdev.Placement `json:"fs,omitempty"`
}

func (h *handler) volumeLocality(w http.ResponseWriter, r *http.Request) error {
	vols, err := h.vols()
	if err != nil {
		return err
	}
	v, err := vols.Volume(r.Context(), r.PathValue("volume"))
	if err != nil {
		return volumeError(err, r)
	}
	pools, err := vols.ListPools(r.Context())
	if err != nil {
		return err
	}
	dirs := map[string]string{}
	for _, p := range pools {
		dirs[p.Name] = p.Dir
	}
	unit := v.StripeUnit
	if unit <= 0 {
		unit = block.StripeUnit
	}
	out := VolumeLocality{Volume: v.Name, Tenant: v.Tenant, Node: h.node, Size: v.Size, Class: v.Class,
		StripeUnit: unit, Width: len(v.Extents), Members: []VolumeMember{}}
	for i, e := range v.Extents {
		m := VolumeMember{Index: i, Pool: e.Pool, PoolDir: dirs[e.Pool], Capacity: e.Capacity}
		if m.PoolDir != "" {
			m.Path = block.MemberPath(m.PoolDir, v.Volume, i)
			_, statErr := os.Stat(m.Path)
			m.Exists = statErr == nil
			// Until the volume is opened its file (and maybe the pool
			// directory) does not exist: describe the nearest directory
			// that does, which is where it will be created.
			at := m.Path
			for {
				if _, err := os.Stat(at); err == nil || filepath.Dir(at) == at {
					break
				}
				at = filepath.Dir(at)
			}
			if p, err := (sysdev.Reader{}).ForPath(at); err == nil {
				m.FS = &p
			} else if !errors.Is(err, os.ErrNotExist) {
				h.log.Warn("volume locality: device of a member", "volume", v.Name, "path", at, "err", err)
			}
		}
		out.Members = append(out.Members, m)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
