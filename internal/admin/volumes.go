package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/facet-sds/facet/internal/block"
	"github.com/facet-sds/facet/internal/meta"
)

// Volumes is the block layer's management (block.Manager).
type Volumes interface {
	CreatePool(ctx context.Context, p meta.Pool) (meta.Pool, error)
	ListPools(ctx context.Context) ([]block.PoolUsage, error)
	DeletePool(ctx context.Context, name string) error
	CreateVolume(ctx context.Context, v meta.Volume) (meta.Volume, error)
	ResizeVolume(ctx context.Context, name string, size int64) (meta.Volume, error)
	SetThrottle(ctx context.Context, name string, t meta.Throttle) (meta.Volume, error)
	DeleteVolume(ctx context.Context, name string) error
	Volumes(ctx context.Context, tenant string) ([]block.VolumeStatus, error)
	Volume(ctx context.Context, name string) (block.VolumeStatus, error)
	ClientCert(ctx context.Context, tenant string) (block.ClientCert, error)
	CreateClientPSK(ctx context.Context, tenant string) (block.ClientPSK, error)
	DeleteClientPSK(ctx context.Context, tenant string) error
}

// NBDClientRequest is the body of POST /nbd/clients.
type NBDClientRequest struct {
	Tenant string `json:"tenant"`
}

// CreatePoolRequest is the body of POST /pools. Rates are per second,
// sizes in bytes.
type CreatePoolRequest struct {
	Name     string `json:"name"`
	Dir      string `json:"dir"`
	Capacity int64  `json:"capacity"`
	SeqBW    int64  `json:"seq_bw"`
	RandIOPS int64  `json:"rand_iops"`
	Usage    string `json:"usage"`
}

// PoolList is the body of GET /pools.
type PoolList struct {
	Pools []block.PoolUsage `json:"pools"`
}

// CreateVolumeRequest is the body of POST /volumes: capacity plus one QoS
// class (sequential with seq_bw, random with iops, cold, best-effort).
type CreateVolumeRequest struct {
	Name   string `json:"name"`
	Tenant string `json:"tenant"`
	Size   int64  `json:"size"`
	Class  string `json:"class"`
	SeqBW  int64  `json:"seq_bw,omitempty"`
	IOPS   int64  `json:"iops,omitempty"`
}

// ResizeVolumeRequest is the body of PUT /volumes/{volume}/size.
type ResizeVolumeRequest struct {
	Size int64 `json:"size"`
}

// VolumeList is the body of GET /volumes.
type VolumeList struct {
	Volumes []block.VolumeStatus `json:"volumes"`
}

func (h *handler) vols() (Volumes, error) {
	if h.volumes == nil {
		return nil, apiErr(http.StatusNotImplemented, "NotImplemented", "block storage is not running on this node")
	}
	return h.volumes, nil
}

// volumeError maps the block layer's errors; the rest go to storeError.
func volumeError(err error, r *http.Request) error {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return err
	case errors.Is(err, block.ErrNoPlacement):
		return apiErr(http.StatusConflict, "NoPlacement", detail(err, block.ErrNoPlacement))
	case errors.Is(err, block.ErrInvalidReservation):
		return apiErr(http.StatusBadRequest, "InvalidReservation", detail(err, block.ErrInvalidReservation))
	case errors.Is(err, block.ErrNoTLS):
		return apiErr(http.StatusNotImplemented, "NotImplemented", block.ErrNoTLS.Error())
	case errors.Is(err, meta.ErrNoNBDKey):
		return apiErr(http.StatusNotFound, "NoSuchKey", detail(err, meta.ErrNoNBDKey))
	case errors.Is(err, block.ErrNoPSKStore):
		return apiErr(http.StatusNotImplemented, "NotImplemented", block.ErrNoPSKStore.Error())
	case errors.Is(err, block.ErrVolumeBusy):
		return apiErr(http.StatusConflict, "VolumeInUse", detail(err, block.ErrVolumeBusy))
	case errors.Is(err, meta.ErrInvalidPool):
		return apiErr(http.StatusBadRequest, "InvalidPool", detail(err, meta.ErrInvalidPool))
	case errors.Is(err, meta.ErrPoolExists):
		return apiErr(http.StatusConflict, "PoolExists", detail(err, meta.ErrPoolExists))
	case errors.Is(err, meta.ErrPoolNotFound):
		return apiErr(http.StatusNotFound, "NoSuchPool", fmt.Sprintf("pool %q does not exist", r.PathValue("pool")))
	case errors.Is(err, meta.ErrPoolInUse):
		return apiErr(http.StatusConflict, "PoolInUse", detail(err, meta.ErrPoolInUse))
	case errors.Is(err, meta.ErrInvalidVolume):
		return apiErr(http.StatusBadRequest, "InvalidVolume", detail(err, meta.ErrInvalidVolume))
	case errors.Is(err, meta.ErrVolumeExists):
		return apiErr(http.StatusConflict, "VolumeExists", detail(err, meta.ErrVolumeExists))
	case errors.Is(err, meta.ErrVolumeNotFound):
		return apiErr(http.StatusNotFound, "NoSuchVolume", fmt.Sprintf("volume %q does not exist", r.PathValue("volume")))
	case errors.Is(err, meta.ErrTenantNotFound):
		return apiErr(http.StatusNotFound, "NoSuchTenant", detail(err, meta.ErrTenantNotFound))
	}
	return err
}

func (h *handler) createPool(w http.ResponseWriter, r *http.Request) error {
	v, err := h.vols()
	if err != nil {
		return err
	}
	var req CreatePoolRequest
	if err := decodeBody(r, w, &req); err != nil {
		return err
	}
	p, err := v.CreatePool(r.Context(), meta.Pool{Name: req.Name, Dir: req.Dir, Capacity: req.Capacity, SeqBW: req.SeqBW, RandIOPS: req.RandIOPS, Usage: req.Usage})
	if err != nil {
		return volumeError(err, r)
	}
	writeJSON(w, http.StatusCreated, p)
	return nil
}

func (h *handler) listPools(w http.ResponseWriter, r *http.Request) error {
	v, err := h.vols()
	if err != nil {
		return err
	}
	ps, err := v.ListPools(r.Context())
	if err != nil {
		return volumeError(err, r)
	}
	writeJSON(w, http.StatusOK, PoolList{Pools: ps})
	return nil
}

func (h *handler) deletePool(w http.ResponseWriter, r *http.Request) error {
	v, err := h.vols()
	if err != nil {
		return err
	}
	if err := v.DeletePool(r.Context(), r.PathValue("pool")); err != nil {
		return volumeError(err, r)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *handler) createVolume(w http.ResponseWriter, r *http.Request) error {
	v, err := h.vols()
	if err != nil {
		return err
	}
	var req CreateVolumeRequest
	if err := decodeBody(r, w, &req); err != nil {
		return err
	}
	out, err := v.CreateVolume(r.Context(), meta.Volume{Name: req.Name, Tenant: req.Tenant, Size: req.Size, Class: req.Class, SeqBW: req.SeqBW, IOPS: req.IOPS})
	if err != nil {
		return volumeError(err, r)
	}
	st, err := v.Volume(r.Context(), out.Name)
	if err != nil {
		return volumeError(err, r)
	}
	writeJSON(w, http.StatusCreated, st)
	return nil
}

func (h *handler) listVolumes(w http.ResponseWriter, r *http.Request) error {
	v, err := h.vols()
	if err != nil {
		return err
	}
	vs, err := v.Volumes(r.Context(), r.URL.Query().Get("tenant"))
	if err != nil {
		return volumeError(err, r)
	}
	writeJSON(w, http.StatusOK, VolumeList{Volumes: vs})
	return nil
}

func (h *handler) getVolume(w http.ResponseWriter, r *http.Request) error {
	v, err := h.vols()
	if err != nil {
		return err
	}
	st, err := v.Volume(r.Context(), r.PathValue("volume"))
	if err != nil {
		return volumeError(err, r)
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

func (h *handler) deleteVolume(w http.ResponseWriter, r *http.Request) error {
	v, err := h.vols()
	if err != nil {
		return err
	}
	if err := v.DeleteVolume(r.Context(), r.PathValue("volume")); err != nil {
		return volumeError(err, r)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *handler) resizeVolume(w http.ResponseWriter, r *http.Request) error {
	v, err := h.vols()
	if err != nil {
		return err
	}
	var req ResizeVolumeRequest
	if err := decodeBody(r, w, &req); err != nil {
		return err
	}
	if _, err := v.ResizeVolume(r.Context(), r.PathValue("volume"), req.Size); err != nil {
		return volumeError(err, r)
	}
	return h.getVolume(w, r)
}

func (h *handler) setVolumeThrottle(w http.ResponseWriter, r *http.Request) error {
	v, err := h.vols()
	if err != nil {
		return err
	}
	var req meta.Throttle
	if err := decodeBody(r, w, &req); err != nil {
		return err
	}
	if _, err := v.SetThrottle(r.Context(), r.PathValue("volume"), req); err != nil {
		return volumeError(err, r)
	}
	return h.getVolume(w, r)
}

func (h *handler) createNBDClient(w http.ResponseWriter, r *http.Request) error {
	return createTenantCredential(h, w, r, Volumes.ClientCert)
}

// createNBDPSK creates (or replaces) a tenant's NBD TLS pre-shared key;
// the key is in the answer and nowhere else.
func (h *handler) createNBDPSK(w http.ResponseWriter, r *http.Request) error {
	return createTenantCredential(h, w, r, Volumes.CreateClientPSK)
}

// createTenantCredential answers the NBD credential requests, which differ
// only in what they issue for the tenant named in the body.
func createTenantCredential[T any](h *handler, w http.ResponseWriter, r *http.Request, issue func(Volumes, context.Context, string) (T, error)) error {
	v, err := h.vols()
	if err != nil {
		return err
	}
	var req NBDClientRequest
	if err := decodeBody(r, w, &req); err != nil {
		return err
	}
	cred, err := issue(v, r.Context(), req.Tenant)
	if err != nil {
		return volumeError(err, r)
	}
	writeJSON(w, http.StatusCreated, cred)
	return nil
}

func (h *handler) deleteNBDPSK(w http.ResponseWriter, r *http.Request) error {
	v, err := h.vols()
	if err != nil {
		return err
	}
	if err := v.DeleteClientPSK(r.Context(), r.PathValue("name")); err != nil {
		return volumeError(err, r)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
