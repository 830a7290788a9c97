package control

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/policy"
	"github.com/facet-sds/facet/internal/qos"
)

// The control API's SLO records (PUT/GET/DELETE /v1/slos) and bandwidth
// views (/v1/bw): records are checked with the DSL's own checker, stored,
// and read back through the SLO cache as the data path sees them.

// Refresher re-reads the SLOs in force (*qos.Limiter).
type Refresher interface{ Refresh() }

// SLOAPIConfig configures the control API's QoS service.
type SLOAPIConfig struct {
	Store SLOStore
	SLOs  *SLOCache
	// Limiter is refreshed after a change, so that this node applies it
	// at once; other gateways at their next period.
	Limiter Refresher
	// Fleet is the fleet's QoS reports (the /bw views).
	Fleet *qos.Fleet
	// Algorithm names the bandwidth controller's algorithm ("" is crystal).
	Algorithm string
}

// SLOAPI is the control API's QoS service (admin.QoSService): the SLO
// records and the bandwidth views.
type SLOAPI struct{ c SLOAPIConfig }

var _ admin.QoSService = SLOAPI{}

// NewSLOAPI returns the QoS service over cfg.
func NewSLOAPI(cfg SLOAPIConfig) SLOAPI { return SLOAPI{cfg} }

func (a SLOAPI) ListSLOs(ctx context.Context) ([]admin.SLO, error) {
	list, err := a.c.Store.ListSLOs(ctx)
	if err != nil {
		return nil, err
	}
	out := []admin.SLO{}
	seen := map[string]bool{}
	done := map[[2]string]bool{} // classes with an API record
	for _, s := range list {
		slo, err := qos.DecodeSLO(s.Spec)
		if err != nil {
			continue
		}
		o := sloOut(s.Tenant, "api", "", slo, s.Updated)
		if o.Class = s.Class; s.Class != "" {
			done[[2]string{s.Tenant, s.Class}] = true
		} else {
			seen[s.Tenant] = true
		}
		out = append(out, o)
	}
	if a.c.SLOs.policies != nil {
		for _, p := range a.c.SLOs.policies.BandwidthSLOs() {
			name := p.Target
			if name == "" {
				name = "*"
			}
			if seen[name] || p.Delete {
				continue
			}
			seen[name] = true
			if slo, err := qos.SLOFromParams(p.Params); err == nil {
				out = append(out, sloOut(name, "policy", p.PolicyID, slo, time.Time{}))
			}
		}
	}
	if a.c.SLOs.policies != nil {
		// The classes' SLOs, each as in force (the latest, most
		// specific), unless an API record replaces it.
		for _, p := range a.c.SLOs.policies.ContextBandwidthSLOs() {
			name := cmp.Or(p.Target, "*")
			k := [2]string{name, p.Context}
			if done[k] {
				continue
			}
			done[k] = true
			params, ok := a.c.SLOs.policies.ContextBandwidth(p.Target, p.Context)
			if slo, err := qos.SLOFromParams(params); ok && err == nil {
				o := sloOut(name, "policy", p.PolicyID, slo, time.Time{})
				o.Class = p.Context
				out = append(out, o)
			}
		}
	}
	slices.SortFunc(out, func(x, y admin.SLO) int {
		return cmp.Or(strings.Compare(x.Tenant, y.Tenant), strings.Compare(x.Class, y.Class))
	})
	return out, nil
}

func sloOut(tenant, source, policyID string, s qos.SLO, updated time.Time) admin.SLO {
	out := admin.SLO{Tenant: tenant, Source: source, Policy: policyID, Get: s.Get, Put: s.Put, Reservation: s.Reservation,
		Limit: s.Limit, Weight: s.Weight, Ops: s.Ops, Background: s.Background}
	if !updated.IsZero() {
		t := updated.UTC()
		out.Updated = &t
	}
	return out
}

func (a SLOAPI) GetSLO(ctx context.Context, tenant, class string) (admin.SLO, error) {
	if class != "" {
		return a.getClassSLO(ctx, tenant, class)
	}
	s, err := a.c.Store.GetSLO(ctx, tenant)
	if err == nil {
		slo, derr := qos.DecodeSLO(s.Spec)
		if derr != nil {
			return admin.SLO{}, derr
		}
		return sloOut(tenant, "api", "", slo, s.Updated), nil
	}
	if !errors.Is(err, meta.ErrSLONotFound) {
		return admin.SLO{}, err
	}
	if a.c.SLOs.policies != nil {
		if p, ok := a.c.SLOs.policies.BandwidthSLO(tenant); ok {
			if slo, err := qos.SLOFromParams(p); err == nil {
				return sloOut(tenant, "policy", "", slo, time.Time{}), nil
			}
		}
	}
	return admin.SLO{}, admin.ErrNoSuchSLO
}

// getClassSLO is the SLO in force for tenant's class: its API record, or
// the CONTEXT policies'.
func (a SLOAPI) getClassSLO(ctx context.Context, tenant, class string) (admin.SLO, error) {
	s, err := a.c.Store.GetClassSLO(ctx, tenant, class)
	if err == nil {
		slo, derr := qos.DecodeSLO(s.Spec)
		if derr != nil {
			return admin.SLO{}, derr
		}
		o := sloOut(tenant, "api", "", slo, s.Updated)
		o.Class = class
		return o, nil
	}
	if !errors.Is(err, meta.ErrSLONotFound) {
		return admin.SLO{}, err
	}
	if a.c.SLOs.policies != nil {
		if p, ok := a.c.SLOs.policies.ContextBandwidth(tenant, class); ok {
			if slo, err := qos.SLOFromParams(p); err == nil {
				o := sloOut(tenant, "policy", "", slo, time.Time{})
				o.Class = class
				return o, nil
			}
		}
	}
	return admin.SLO{}, admin.ErrNoSuchSLO
}

func (a SLOAPI) PutSLO(ctx context.Context, tenant, class string, spec admin.SLOSpec) (admin.SLO, error) {
	slo, err := ParseSLOSpec(spec)
	if err != nil {
		return admin.SLO{}, err
	}
	if class != "" {
		if err := classSpecCheck(spec); err != nil {
			return admin.SLO{}, err
		}
	}
	data, err := jsonSLO(slo)
	if err != nil {
		return admin.SLO{}, err
	}
	var s meta.SLO
	if class != "" {
		s, err = a.c.Store.PutClassSLO(ctx, tenant, class, data)
	} else {
		s, err = a.c.Store.PutSLO(ctx, tenant, data)
	}
	if err != nil {
		return admin.SLO{}, err
	}
	a.c.SLOs.Refresh(ctx)
	a.c.Limiter.Refresh() // here at once; other gateways at their next period
	o := sloOut(tenant, "api", "", slo, s.Updated)
	o.Class = class
	return o, nil
}

// classSpecCheck refuses the SLO parameters a request class has no use
// for, rather than keeping them unread (a policy naming a CONTEXT
// ignores them; the API says so).
func classSpecCheck(spec admin.SLOSpec) error {
	for _, k := range []string{"get", "put"} {
		if _, ok := spec[k]; ok {
			return fmt.Errorf("%w: %s: a request class's bytes are one flow in both directions; give its guaranteed rate as reservation", admin.ErrInvalidSLO, k)
		}
	}
	if _, ok := spec["background"]; ok {
		// The tenant's background class is Facet's own work.
		return fmt.Errorf("%w: background: a request class has no background work (set it on the tenant's SLO)", admin.ErrInvalidSLO)
	}
	return nil
}

func (a SLOAPI) DeleteSLO(ctx context.Context, tenant, class string) error {
	var err error
	if class != "" {
		err = a.c.Store.DeleteClassSLO(ctx, tenant, class)
	} else {
		err = a.c.Store.DeleteSLO(ctx, tenant)
	}
	if errors.Is(err, meta.ErrSLONotFound) {
		return admin.ErrNoSuchSLO
	}
	if err == nil {
		a.c.SLOs.Refresh(ctx)
		a.c.Limiter.Refresh()
	}
	return err
}

func (a SLOAPI) Bandwidth(context.Context) (admin.BWView, error) {
	return BandwidthView(a.c.Fleet, a.c.Algorithm), nil
}

// BandwidthView renders the fleet's reports for the /bw views.
func BandwidthView(f *qos.Fleet, algo string) admin.BWView {
	v := admin.BWView{Algorithm: algo, Nodes: []admin.BWNode{}}
	if v.Algorithm == "" {
		v.Algorithm = "crystal"
	}
	if m := f.Assignments(); m != nil {
		v.Seq = m.Seq
	}
	for _, rep := range f.Nodes() {
		n := admin.BWNode{Node: rep.Node, Stage: rep.Stage, Device: rep.Stage, Capacity: rep.Capacity, Assigner: rep.Assigner, Updated: rep.Time, Flows: []admin.BWFlow{}}
		unlimited := false
		for _, fl := range rep.Flows {
			n.Asked += fl.Rate
			unlimited = unlimited || fl.Rate == 0
			n.Served += fl.Served
			n.Streams += fl.Active
			n.Flows = append(n.Flows, admin.BWFlow{Tenant: fl.Tenant, Class: string(fl.Class), Asked: fl.Rate, Source: fl.Source,
				Served: fl.Served, Streams: fl.Streams, Active: fl.Active, Waited: fl.Waited,
				OpsRate: fl.OpsRate, OpsSource: fl.OpsSource, Ops: fl.Ops, Queued: fl.Queued, Rejected: fl.Rejected, InLine: fl.InLine})
		}
		for _, d := range rep.Devices {
			bd := admin.BWDevice{Device: d.Device, Served: d.Served, Asked: d.Asked, Streams: []admin.BWThread{}}
			for _, t := range d.Streams {
				bd.Streams = append(bd.Streams, admin.BWThread{TID: t.TID, Flow: t.Flow, Need: t.Need, Served: t.Served})
			}
			n.Devices = append(n.Devices, bd)
		}
		if unlimited {
			// A sum leaving an unlimited flow out would understate what
			// the node lets through.
			n.Asked = 0
		}
		v.Nodes = append(v.Nodes, n)
	}
	return v
}

// sloValueRE is what a rate may look like before the DSL reads it: a
// number and a unit, nothing that could end the WITH list.
var sloValueRE = regexp.MustCompile(`^[0-9][0-9.]*(e[0-9]+)?[A-Za-z/]{0,8}$`)

// ParseSLOSpec validates an API SLO spec with the DSL's own checker (the
// same units, ranges and messages as SET bandwidth WITH ...).
func ParseSLOSpec(spec admin.SLOSpec) (qos.SLO, error) {
	if len(spec) == 0 {
		return qos.SLO{}, fmt.Errorf("%w: empty: set at least one of %s", admin.ErrInvalidSLO, strings.Join(qos.SLOParams, ", "))
	}
	names := make([]string, 0, len(spec))
	for k := range spec {
		names = append(names, k)
	}
	slices.Sort(names)
	var with []string
	for _, k := range names {
		if !slices.Contains(qos.SLOParams, k) {
			return qos.SLO{}, fmt.Errorf("%w: unknown field %q (known: %s)", admin.ErrInvalidSLO, k, strings.Join(qos.SLOParams, ", "))
		}
		var v string
		switch x := spec[k].(type) {
		case string:
			v = strings.TrimSpace(x)
		case float64:
			if x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
				return qos.SLO{}, fmt.Errorf("%w: %s=%v: want a finite, non-negative number", admin.ErrInvalidSLO, k, x)
			}
			v = strconv.FormatFloat(x, 'f', -1, 64)
		default:
			return qos.SLO{}, fmt.Errorf("%w: %s: want a number or a string such as \"30MB/s\"", admin.ErrInvalidSLO, k)
		}
		if strings.HasPrefix(v, "-") {
			return qos.SLO{}, fmt.Errorf("%w: %s=%q: must not be negative", admin.ErrInvalidSLO, k, v)
		}
		if !sloValueRE.MatchString(v) {
			return qos.SLO{}, fmt.Errorf("%w: %s=%q: want a number with an optional unit, such as 30MB/s", admin.ErrInvalidSLO, k, v)
		}
		with = append(with, k+"="+v)
	}
	text := "FOR TENANT t DO SET bandwidth WITH " + strings.Join(with, ", ")
	ps, err := policy.ParseAndCheck("slo", text, &policy.StaticVocabulary{AnyTarget: true})
	if err != nil {
		var pe *policy.Error
		if errors.As(err, &pe) {
			return qos.SLO{}, fmt.Errorf("%w: %s", admin.ErrInvalidSLO, pe.Msg)
		}
		return qos.SLO{}, fmt.Errorf("%w: %v", admin.ErrInvalidSLO, err)
	}
	if len(ps) != 1 || len(ps[0].Actions) != 1 {
		return qos.SLO{}, fmt.Errorf("%w: not one SET bandwidth", admin.ErrInvalidSLO)
	}
	slo, err := qos.SLOFromParams(ps[0].Actions[0].Values)
	if err != nil {
		return qos.SLO{}, fmt.Errorf("%w: %v", admin.ErrInvalidSLO, err)
	}
	return slo, nil
}

func jsonSLO(s qos.SLO) ([]byte, error) { return json.Marshal(s) }
