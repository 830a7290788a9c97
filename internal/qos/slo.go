package qos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// SLO is a tenant's bandwidth and operations objective, in mClock's terms:
// reservations (guaranteed minimum), a limit (cap) and a weight (share of
// the spare). Rates are bytes per second, operations per second; zero
// means none.
type SLO struct {
	// Get and Put are the reservations of the GET and PUT classes.
	Get float64 `json:"get,omitempty"`
	Put float64 `json:"put,omitempty"`
	// Reservation is the reservation of a class that Get/Put leave unset.
	Reservation float64 `json:"reservation,omitempty"`
	// Limit caps each class, fleet-wide.
	Limit float64 `json:"limit,omitempty"`
	// Weight is the tenant's share of spare bandwidth; 0 means 1.
	Weight float64 `json:"weight,omitempty"`
	// Ops caps the tenant's operations per second in each class,
	// fleet-wide: the bandwidth controller splits it over the gateways by
	// demand (each gateway applies the whole cap while no controller is
	// live).
	Ops float64 `json:"ops,omitempty"`
	// Background caps the tenant's background class (Limit when unset).
	Background float64 `json:"background,omitempty"`
}

// SLOParams are the SLO's parameter names, as in the DSL's SET bandwidth.
var SLOParams = []string{"get", "put", "reservation", "limit", "weight", "ops", "background"}

// ReservationOf is the class's guaranteed bandwidth.
func (s SLO) ReservationOf(c Class) float64 {
	var r float64
	switch c {
	case ClassGet:
		r = s.Get
	case ClassPut:
		r = s.Put
	default:
		if _, ok := c.Context(); !ok {
			return 0 // deletes carry no bytes; background work is only capped
		}
		// A context class's SLO is its own (a CONTEXT policy): its
		// reservation covers the class's bytes in both directions.
	}
	if r == 0 {
		r = s.Reservation
	}
	if l := s.LimitOf(c); l > 0 && r > l {
		r = l
	}
	return r
}

// LimitOf is the class's cap; +Inf when none.
func (s SLO) LimitOf(c Class) float64 {
	l := s.Limit
	if c == ClassBackground && s.Background > 0 && (l == 0 || s.Background < l) {
		l = s.Background
	}
	if l <= 0 {
		return math.Inf(1)
	}
	return l
}

// WeightOf is the tenant's weight (1 when unset).
func (s SLO) WeightOf() float64 {
	if s.Weight <= 0 {
		return 1
	}
	return s.Weight
}

// IsZero reports whether the SLO sets nothing.
func (s SLO) IsZero() bool { return s == SLO{} }

// SLOFromParams builds an SLO from canonical parameters (rates in bytes/s,
// as the policy checker leaves them).
func SLOFromParams(p map[string]string) (SLO, error) {
	var s SLO
	for k, v := range p {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return SLO{}, fmt.Errorf("qos: SLO parameter %s=%q: want a non-negative number", k, v)
		}
		switch k {
		case "get":
			s.Get = f
		case "put":
			s.Put = f
		case "reservation":
			s.Reservation = f
		case "limit":
			s.Limit = f
		case "weight":
			s.Weight = f
		case "ops":
			s.Ops = f
		case "background":
			s.Background = f
		default:
			return SLO{}, fmt.Errorf("qos: unknown SLO parameter %q", k)
		}
	}
	return s, nil
}

// DecodeSLO reads an SLO stored as JSON (the metadata store's opaque spec),
// refusing unknown fields and negative values.
func DecodeSLO(data []byte) (SLO, error) {
	var s SLO
	if err := strictJSON(data, &s); err != nil {
		return SLO{}, fmt.Errorf("qos: SLO: %w", err)
	}
	for _, f := range []float64{s.Get, s.Put, s.Reservation, s.Limit, s.Weight, s.Ops, s.Background} {
		if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return SLO{}, fmt.Errorf("qos: SLO: values must be finite and non-negative")
		}
	}
	return s, nil
}

// SLOSource gives a tenant's effective SLO; false when it has none.
type SLOSource interface {
	SLO(tenant string) (SLO, bool)
}

// ClassSLOSource is an SLOSource that also knows the SLOs of tenants'
// context classes (policies naming a CONTEXT).
type ClassSLOSource interface {
	SLOSource
	ClassSLO(tenant, class string) (SLO, bool)
}

// SLOOf is the SLO that governs tenant's flow of class c: the tenant's for
// an operation class; for a context class, the class's own (none when no
// policy names it or src knows no classes).
func SLOOf(src SLOSource, tenant string, c Class) SLO {
	if src == nil {
		return SLO{}
	}
	if name, ok := c.Context(); ok {
		if cs, ok := src.(ClassSLOSource); ok {
			s, _ := cs.ClassSLO(tenant, name)
			return s
		}
		return SLO{}
	}
	s, _ := src.SLO(tenant)
	return s
}

// ClassSLOs is a ClassSLOSource over fixed maps: Tenants by tenant,
// Classes by "tenant/class" (tests, benchmarks).
type ClassSLOs struct {
	Tenants SLOMap
	Classes map[string]SLO
}

// SLO implements SLOSource.
func (m ClassSLOs) SLO(tenant string) (SLO, bool) { return m.Tenants.SLO(tenant) }

// ClassSLO implements ClassSLOSource.
func (m ClassSLOs) ClassSLO(tenant, class string) (SLO, bool) {
	s, ok := m.Classes[tenant+"/"+class]
	return s, ok
}

// SLOMap is an SLOSource over a fixed map (tests, benchmarks, snapshots).
type SLOMap map[string]SLO

// SLO implements SLOSource.
func (m SLOMap) SLO(tenant string) (SLO, bool) {
	s, ok := m[tenant]
	return s, ok
}

func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}
