package meta

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Errors of pools and volumes.
var (
	ErrInvalidPool    = errors.New("invalid pool")
	ErrPoolExists     = errors.New("pool already exists")
	ErrPoolNotFound   = errors.New("no such pool")
	ErrPoolInUse      = errors.New("pool still holds volumes")
	ErrInvalidVolume  = errors.New("invalid volume")
	ErrVolumeExists   = errors.New("volume already exists")
	ErrVolumeNotFound = errors.New("no such volume")
)

// Pool is a device class for block volumes: a directory and what it
// declares it can give (seeds/002 §4.1).
type Pool struct {
	Name     string    `json:"name"`
	Dir      string    `json:"dir"`
	Capacity int64     `json:"capacity"`  // bytes
	SeqBW    int64     `json:"seq_bw"`    // sequential bytes/s
	RandIOPS int64     `json:"rand_iops"` // random 4 KiB operations/s
	Usage    string    `json:"usage"`     // sequential, random or best-effort
	Created  time.Time `json:"created"`
	// Default marks the pool the block stage keeps in its data directory
	// while an administrator has configured none (block.Config.DefaultPoolDir).
	Default bool `json:"default,omitempty"`
}

// Extent is a volume's share of one pool: one stripe member.
type Extent struct {
	Pool     string `json:"pool"`
	Capacity int64  `json:"capacity"` // bytes reserved on the pool
	SeqBW    int64  `json:"seq_bw"`
	IOPS     int64  `json:"iops"`
}

// Throttle is a volume's per-direction caps; 0 is unlimited.
type Throttle struct {
	ReadBW    int64 `json:"read_bw,omitempty"`
	WriteBW   int64 `json:"write_bw,omitempty"`
	ReadIOPS  int64 `json:"read_iops,omitempty"`
	WriteIOPS int64 `json:"write_iops,omitempty"`
}

// Volume is a block device exported over NBD, owned by a tenant.
type Volume struct {
	Name   string `json:"name"`
	Tenant string `json:"tenant"`
	// ID is random and fixed at creation: it names the backing files
	// and enters the volume's key derivation, so a volume created again
	// under an old name gets neither the old data nor the old key.
	ID    string `json:"id"`
	Size  int64  `json:"size"`
	Class string `json:"class"` // sequential, random, cold or best-effort
	SeqBW int64  `json:"seq_bw,omitempty"`
	IOPS  int64  `json:"iops,omitempty"`
	// Extents are the stripe members in stripe order; StripeUnit is the
	// bytes of the volume each holds in turn.
	Extents    []Extent  `json:"extents"`
	StripeUnit int64     `json:"stripe_unit"`
	Throttle   Throttle  `json:"throttle"`
	Created    time.Time `json:"created"`
	// Stack is the block filter stack the block stage last applied to
	// the volume's I/O, in write order (reads undo it in reverse), and
	// StackSince when it did: what the stored bytes went through. Empty
	// until the volume is first opened with filters.
	Stack      []AppliedFilter `json:"applied_stack,omitempty"`
	StackSince time.Time       `json:"applied_since,omitzero"`
}

// AppliedFilter is one filter of a volume's applied stack and the policy
// it came from.
type AppliedFilter struct {
	Filter string            `json:"filter"`
	Params map[string]string `json:"params,omitempty"`
	Policy string            `json:"policy,omitempty"`
}

type poolRecord struct {
	V int `json:"v"`
	Pool
}

func (r *poolRecord) version() int { return r.V }

type volumeRecord struct {
	V int `json:"v"`
	Volume
}

func (r *volumeRecord) version() int { return r.V }

func cloneVolume(v Volume) Volume {
	v.Extents = slices.Clone(v.Extents)
	v.Stack = slices.Clone(v.Stack)
	for i := range v.Stack {
		v.Stack[i].Params = maps.Clone(v.Stack[i].Params)
	}
	return v
}

// ValidVolumeName reports whether name can name a volume (and its NBD
// export): the shape of tenant names.
func ValidVolumeName(name string) bool { return validName(name) }

// CreatePool adds a pool.
func (s *Store) CreatePool(ctx context.Context, p Pool) (Pool, error) {
	if !validName(p.Name) {
		return Pool{}, fmt.Errorf("meta: create pool: %w: name %q: want 1-63 characters [a-z0-9][a-z0-9-_.]*", ErrInvalidPool, p.Name)
	}
	if p.Dir == "" || p.Capacity <= 0 || p.SeqBW < 0 || p.RandIOPS < 0 {
		return Pool{}, fmt.Errorf("meta: create pool %s: %w: needs a directory and a positive capacity", p.Name, ErrInvalidPool)
	}
	p.Created = s.timestamp()
	err := s.kv.update(ctx, func(tx kvTx) error {
		var old poolRecord
		ok, err := getRecord(tx, tblPools, p.Name, &old)
		if err != nil {
			return err
		}
		if ok {
			return fmt.Errorf("%w: %q", ErrPoolExists, p.Name)
		}
		if err := putRecord(tx, tblPools, p.Name, &poolRecord{V: recordVersion, Pool: p}); err != nil {
			return err
		}
		_, err = bumpVersion(tx)
		return err
	})
	if err != nil {
		return Pool{}, fmt.Errorf("meta: create pool: %w", err)
	}
	s.log.Info("pool created", "pool", p.Name)
	return p, nil
}

// ListPools lists pools in name order.
func (s *Store) ListPools(ctx context.Context) ([]Pool, error) {
	return viewList(s, ctx, "pools", listPools)
}

// viewList runs one listing in a read transaction.
func viewList[T any](s *Store, ctx context.Context, what string, list func(kvTx) ([]T, error)) ([]T, error) {
	var out []T
	err := s.kv.view(ctx, func(tx kvTx) error {
		var err error
		out, err = list(tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("meta: list %s: %w", what, err)
	}
	return out, nil
}

func listPools(tx kvTx) ([]Pool, error) {
	out := []Pool{}
	err := scanRecords(tx, tblPools, "", func(r *poolRecord) error {
		out = append(out, r.Pool)
		return nil
	})
	return out, err
}

func listVolumes(tx kvTx) ([]Volume, error) {
	out := []Volume{}
	err := scanRecords(tx, tblVolumes, "", func(r *volumeRecord) error {
		out = append(out, cloneVolume(r.Volume))
		return nil
	})
	return out, err
}

// DeletePool removes a pool that holds no volume.
func (s *Store) DeletePool(ctx context.Context, name string) error {
	err := s.kv.update(ctx, func(tx kvTx) error {
		vols, err := listVolumes(tx)
		if err != nil {
			return err
		}
		for _, v := range vols {
			for _, e := range v.Extents {
				if e.Pool == name {
					return fmt.Errorf("%w: %q holds volume %s", ErrPoolInUse, name, v.Name)
				}
			}
		}
		return deleteRecord(tx, tblPools, name, ErrPoolNotFound)
	})
	if err != nil {
		return fmt.Errorf("meta: delete pool: %w", err)
	}
	s.log.Info("pool deleted", "pool", name)
	return nil
}

// Placer chooses a new or resized volume's extents from the pools and the
// volumes already placed (other than itself). It runs inside the store's
// transaction, so two placements never both count the same free room.
type Placer func(pools []Pool, others []Volume, v Volume) ([]Extent, error)

// CreateVolume places and records a new volume. v.ID and v.Extents are
// filled in; the tenant must exist.
func (s *Store) CreateVolume(ctx context.Context, v Volume, place Placer) (Volume, error) {
	if !validName(v.Name) {
		return Volume{}, fmt.Errorf("meta: create volume: %w: name %q: want 1-63 characters [a-z0-9][a-z0-9-_.]*", ErrInvalidVolume, v.Name)
	}
	if v.Size <= 0 {
		return Volume{}, fmt.Errorf("meta: create volume %s: %w: size must be positive", v.Name, ErrInvalidVolume)
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return Volume{}, fmt.Errorf("meta: create volume: %w", err)
	}
	v.ID, v.Created = hex.EncodeToString(id[:]), s.timestamp()
	var out Volume
	err := s.kv.update(ctx, func(tx kvTx) error {
		var t tenantRecord
		ok, err := getRecord(tx, tblTenants, v.Tenant, &t)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %q", ErrTenantNotFound, v.Tenant)
		}
		var old volumeRecord
		if ok, err := getRecord(tx, tblVolumes, v.Name, &old); err != nil {
			return err
		} else if ok {
			return fmt.Errorf("%w: %q", ErrVolumeExists, v.Name)
		}
		pools, err := listPools(tx)
		if err != nil {
			return err
		}
		vols, err := listVolumes(tx)
		if err != nil {
			return err
		}
		nv := cloneVolume(v)
		if nv.Extents, err = place(pools, vols, nv); err != nil {
			return err
		}
		if err := putRecord(tx, tblVolumes, nv.Name, &volumeRecord{V: recordVersion, Volume: nv}); err != nil {
			return err
		}
		out = cloneVolume(nv)
		_, err = bumpVersion(tx)
		return err
	})
	if err != nil {
		return Volume{}, fmt.Errorf("meta: create volume: %w", err)
	}
	s.log.Info("volume created", "volume", v.Name, "tenant", v.Tenant, "size", v.Size, "extents", len(out.Extents))
	return out, nil
}

// UpdateVolume changes a volume with fn, inside one transaction; fn may
// call place with the other volumes (a resize) or change the throttle.
func (s *Store) UpdateVolume(ctx context.Context, name string, fn func(v *Volume, pools []Pool, others []Volume) error) (Volume, error) {
	var out Volume
	err := s.kv.update(ctx, func(tx kvTx) error {
		var rec volumeRecord
		ok, err := getRecord(tx, tblVolumes, name, &rec)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %q", ErrVolumeNotFound, name)
		}
		pools, err := listPools(tx)
		if err != nil {
			return err
		}
		all, err := listVolumes(tx)
		if err != nil {
			return err
		}
		others := slices.DeleteFunc(all, func(o Volume) bool { return o.Name == name })
		v := cloneVolume(rec.Volume)
		if err := fn(&v, pools, others); err != nil {
			return err
		}
		v.Name, v.ID, v.Tenant, v.Created = rec.Name, rec.ID, rec.Tenant, rec.Created
		if err := putRecord(tx, tblVolumes, name, &volumeRecord{V: recordVersion, Volume: v}); err != nil {
			return err
		}
		out = cloneVolume(v)
		_, err = bumpVersion(tx)
		return err
	})
	if err != nil {
		return Volume{}, fmt.Errorf("meta: update volume: %w", err)
	}
	return out, nil
}

// GetVolume returns a volume.
func (s *Store) GetVolume(ctx context.Context, name string) (Volume, error) {
	var rec volumeRecord
	var ok bool
	err := s.kv.view(ctx, func(tx kvTx) error {
		var err error
		ok, err = getRecord(tx, tblVolumes, name, &rec)
		return err
	})
	if err != nil {
		return Volume{}, fmt.Errorf("meta: get volume: %w", err)
	}
	if !ok {
		return Volume{}, fmt.Errorf("meta: get volume: %w: %q", ErrVolumeNotFound, name)
	}
	return cloneVolume(rec.Volume), nil
}

// ListVolumes lists volumes in name order.
func (s *Store) ListVolumes(ctx context.Context) ([]Volume, error) {
	return viewList(s, ctx, "volumes", listVolumes)
}

// DeleteVolume removes a volume's record (its backing files are the block
// layer's to remove).
func (s *Store) DeleteVolume(ctx context.Context, name string) (Volume, error) {
	var out Volume
	err := s.kv.update(ctx, func(tx kvTx) error {
		var rec volumeRecord
		ok, err := getRecord(tx, tblVolumes, name, &rec)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %q", ErrVolumeNotFound, name)
		}
		out = cloneVolume(rec.Volume)
		return deleteRecord(tx, tblVolumes, name, ErrVolumeNotFound)
	})
	if err != nil {
		return Volume{}, fmt.Errorf("meta: delete volume: %w", err)
	}
	s.log.Info("volume deleted", "volume", name)
	return out, nil
}
