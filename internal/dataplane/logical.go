package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/storage"
)

// PartsKey is the system-metadata key holding the per-part reverse plans
// of a multipart object whose parts went through filters.
const PartsKey = "facet.parts"

// PartPlan is one part's logical and stored lengths and reverse plan.
// The logical length answers GET ?partNumber=N: the backend only knows
// stored part sizes, which filters change.
type PartPlan struct {
	Size   int64 `json:"s"`
	Stored int64 `json:"n"`
	Plan   Plan  `json:"p"`
}

type partsPlan struct {
	Version int        `json:"v"`
	Parts   []PartPlan `json:"parts"`
}

// EncodeParts renders per-part plans; it returns "" when no part has one.
func EncodeParts(parts []PartPlan) (string, error) {
	transformed := false
	for i := range parts {
		parts[i].Plan.Version = planVersion
		if !parts[i].Plan.Empty() {
			transformed = true
		}
	}
	if !transformed {
		return "", nil
	}
	b, err := json.Marshal(partsPlan{Version: planVersion, Parts: parts})
	if err != nil {
		return "", fmt.Errorf("encode part plans: %w", err)
	}
	return string(b), nil
}

func decodeParts(s string) ([]PartPlan, error) {
	var pp partsPlan
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pp); err != nil {
		return nil, fmt.Errorf("decode part plans: %w", err)
	}
	if pp.Version != planVersion {
		return nil, fmt.Errorf("decode part plans: unsupported version %d", pp.Version)
	}
	for i, p := range pp.Parts {
		if p.Size < 0 || p.Stored < 0 {
			return nil, fmt.Errorf("decode part plans: part %d is malformed", i+1)
		}
	}
	return pp.Parts, nil
}

// PartPlansOf returns the per-part plans recorded in system metadata, or
// nil when the object is not a multipart object whose parts went through
// filters.
func PartPlansOf(system map[string]string) ([]PartPlan, error) {
	s := system[PartsKey]
	if s == "" {
		return nil, nil
	}
	return decodeParts(s)
}

// Transformed reports whether an object's stored bytes differ from what
// the client wrote.
func Transformed(m storage.ObjectMeta) bool {
	return m.System[PlanKey] != "" || m.System[PartsKey] != ""
}

// Logical returns the client's view of a stored object: its recorded
// plan (or each part's) undone over the stored bytes.
func (d Decoders) Logical(ctx context.Context, req *filter.Request, b storage.Backend, info storage.ObjectInfo) (filter.Source, error) {
	stored := &StoredSource{Backend: b, Bucket: info.Bucket, Key: info.Key, Info: info}
	if info.Meta.System[PartsKey] != "" {
		parts, err := PartPlansOf(info.Meta.System)
		if err != nil {
			return nil, err
		}
		srcs := make([]filter.Source, 0, len(parts))
		var off int64
		for i, p := range parts {
			var src filter.Source = Slice{Src: stored, Off: off, Len: p.Stored}
			if !p.Plan.Empty() {
				if src, err = d.Open(ctx, req, p.Plan, src); err != nil {
					return nil, fmt.Errorf("part %d: %w", i+1, err)
				}
			}
			if src.Size() != p.Size {
				return nil, fmt.Errorf("part %d decodes to %d bytes, recorded %d: %w", i+1, src.Size(), p.Size, filter.ErrIntegrity)
			}
			srcs = append(srcs, src)
			off += p.Stored
		}
		if off != info.StoredSize {
			return nil, fmt.Errorf("part plans cover %d bytes, object holds %d: %w", off, info.StoredSize, filter.ErrIntegrity)
		}
		return checkSize(NewConcat(srcs), info.Meta.Size)
	}
	plan, err := PlanOf(info.Meta.System)
	if err != nil {
		return nil, err
	}
	if plan.Empty() {
		return stored, nil
	}
	src, err := d.Open(ctx, req, plan, stored)
	if err != nil {
		return nil, err
	}
	return checkSize(src, info.Meta.Size)
}

func checkSize(src filter.Source, want int64) (filter.Source, error) {
	if src.Size() != want {
		return nil, fmt.Errorf("decoded size %d differs from the object's size %d: %w", src.Size(), want, filter.ErrIntegrity)
	}
	return src, nil
}
