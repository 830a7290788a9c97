package ui

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/metrics"
	"github.com/facet-sds/facet/internal/policy"
)

// The states a policy is shown in.
const (
	// showStatic: no metric condition; in force since it was stored.
	showStatic = "static"
	// showPending: a metric condition, and no controller evaluates it.
	showPending = "pending"
	// showArmed: a controller evaluates its trigger, which has not fired
	// (or fired and was undone).
	showArmed = "armed"
	// showTriggered: its controller switched it on.
	showTriggered = "triggered"
	showDisabled  = "disabled"
)

// PolicyView is one policy as the Policies page shows it: its stored
// record, and its state read for people.
type PolicyView struct {
	admin.Policy
	// Show is static, pending, armed, triggered or disabled.
	Show string `json:"show"`
	// At is when it was last triggered or switched off, when known.
	At *time.Time `json:"at,omitempty"`
	// Because is the trigger with the values that fired it
	// ("put_ops=4.2 > 3"), and On the target it fired on ("tenant:t1").
	Because string `json:"because,omitempty"`
	On      string `json:"on,omitempty"`
	// Controller is the id of the controller that runs it.
	Controller string `json:"controller,omitempty"`
	// Redacted is true when the text was withheld from a tenant because
	// it names other tenants too.
	Redacted bool `json:"redacted,omitempty"`
}

// PolicyViewList is the body of GET /ui/api/policies.
type PolicyViewList struct {
	Policies []PolicyView `json:"policies"`
}

// triggeredRe reads the reason a controller stores when it switches a
// policy on: "<trigger with values> on <target> at <RFC 3339 time>".
var (
	triggeredRe   = regexp.MustCompile(`^(.*) on (\S+) at (\S+)$`)
	deactivatedRe = regexp.MustCompile(`^deactivated at (\S+?): .*\((.*) on (\S+)\)$`)
)

// viewOf reads a stored policy's state; controlled says whether a
// controller runs it.
func viewOf(p admin.Policy, controller string) PolicyView {
	v := PolicyView{Policy: p, Controller: controller}
	switch meta.PolicyState(p.State) {
	case meta.PolicyDisabled:
		v.Show = showDisabled
	case meta.PolicyActive:
		v.Show = showStatic
		if m := triggeredRe.FindStringSubmatch(p.Reason); m != nil {
			v.Show, v.Because, v.On = showTriggered, m[1], m[2]
			if t, err := time.Parse(time.RFC3339, m[3]); err == nil {
				v.At = &t
			}
		} else if p.Reason != "" || controller != "" {
			v.Show = showTriggered
		}
	default:
		v.Show = showPending
		if controller != "" {
			v.Show = showArmed
		}
		if m := deactivatedRe.FindStringSubmatch(p.Reason); m != nil {
			v.Because, v.On = m[2], m[3]
			if t, err := time.Parse(time.RFC3339, m[1]); err == nil {
				v.At = &t
			}
		}
	}
	return v
}

// policyView answers GET /ui/api/policies: every policy with its state
// for the admin; for a tenant, those visibility allows.
func (u *UI) policyView(w http.ResponseWriter, r *http.Request, sess session) {
	var list admin.PolicyList
	if err := u.getAPI(r, "/v1/policies", "", &list); err != nil {
		u.log.Error("dashboard: list policies", "err", err)
		writeErr(w, http.StatusBadGateway, "InternalError", "the policy list is not available")
		return
	}
	byPolicy := map[string]string{}
	var cl admin.ControllerList
	if err := u.getAPI(r, "/v1/controllers", "", &cl); err == nil {
		for _, c := range cl.Controllers {
			if c.Policy != "" {
				byPolicy[c.Policy] = c.ID
			}
		}
	} else if !isStatus(err, http.StatusNotImplemented) {
		u.log.Warn("dashboard: list controllers", "err", err)
	}
	out := PolicyViewList{Policies: []PolicyView{}}
	var vis *visibility
	if sess.role == roleTenant {
		vis = u.newVisibility(r.Context(), sess.tenant)
	}
	for _, p := range list.Policies {
		v := viewOf(p, byPolicy[p.ID])
		if vis != nil {
			switch vis.of(p.Text) {
			case visHidden:
				continue
			case visRedacted:
				v = PolicyView{Policy: redact(p), Show: v.Show, At: v.At, Redacted: true}
			}
			v.Controller = ""
		}
		out.Policies = append(out.Policies, v)
	}
	writeJSON(w, http.StatusOK, out)
}

// redact keeps of a policy what names no one: its id, state and times.
func redact(p admin.Policy) admin.Policy {
	return admin.Policy{ID: p.ID, Seq: p.Seq, Line: p.Line, State: p.State, Created: p.Created,
		Text: "(this policy also applies to other tenants; its text is shown to the administrator only)"}
}

// Visibility of a policy to a tenant.
type vis int

const (
	visHidden   vis = iota // it is not about the tenant
	visFull                // it is about the tenant and names no other
	visRedacted            // it is about the tenant and names others too
)

// visibility decides which policies a tenant may read: those whose
// targets cover it (its name, its buckets or objects, a group it is in,
// ALL) and name no other tenant. A policy that covers it and names others
// is shown redacted.
type visibility struct {
	ctx    context.Context
	me     string
	store  Store
	owners map[string]string
	groups map[string]bool
}

func (u *UI) newVisibility(ctx context.Context, me string) *visibility {
	return &visibility{ctx: ctx, me: me, store: u.store, owners: map[string]string{}, groups: map[string]bool{}}
}

func (v *visibility) of(text string) vis {
	pols, err := policy.Parse("", text)
	if err != nil || len(pols) != 1 {
		return visHidden // stored policies parse; refuse to guess otherwise
	}
	covers, other := false, false
	mark := func(tenant string) {
		if tenant == v.me {
			covers = true
		} else {
			other = true
		}
	}
	for _, t := range pols[0].Targets {
		switch t.Kind {
		case policy.TargetTenant:
			mark(t.Name)
		case policy.TargetBucket, policy.TargetObject:
			tenant, _, ok := strings.Cut(t.Name, "/")
			if !ok {
				tenant = v.owner(t.Name) // a bare bucket name
			}
			mark(tenant)
		case policy.TargetGroup:
			if v.inGroup(t.Name) {
				covers = true
			}
		case policy.TargetAll:
			if t.Scope != policy.TargetVolume {
				covers = true
			}
		default:
			other = true // volumes: their owners are not known here
		}
	}
	switch {
	case covers && !other:
		return visFull
	case covers:
		return visRedacted
	}
	return visHidden
}

func (v *visibility) owner(bucket string) string {
	if o, ok := v.owners[bucket]; ok {
		return o
	}
	o, _, err := v.store.BucketOwner(v.ctx, bucket)
	if err != nil {
		o = ""
	}
	v.owners[bucket] = o
	return o
}

func (v *visibility) inGroup(name string) bool {
	if in, ok := v.groups[name]; ok {
		return in
	}
	in := false
	if g, err := v.store.GetGroup(v.ctx, name); err == nil {
		in = slices.ContainsFunc(g.Members, func(m string) bool {
			t, _, _ := strings.Cut(m, "/")
			return t == v.me
		})
	}
	v.groups[name] = in
	return in
}

// tenantOfTarget is the tenant a metric target ("tenant:t1",
// "bucket:t1/b1") is about; "" when it is not a target.
func tenantOfTarget(s string) string {
	t, err := metrics.ParseTarget(s)
	if err != nil {
		return ""
	}
	return t.Tenant
}
