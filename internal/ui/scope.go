package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/metrics"
)

// decision is what a tenant's request to the control API becomes: refused
// (deny says why), or sent to path?query (built here from checked parts,
// never the browser's own string) and its answer passed through filter
// when there is one.
type decision struct {
	deny   string
	path   string
	query  string
	filter func(r *http.Request, u *UI, me string, body []byte) (any, error)
}

const notForTenants = "not available to a tenant session"

// tenantDecision is the tenant scope: the allow-list of control API calls
// a tenant session may make, each pinned to the tenant's own name. What
// is not listed is refused, so an API that appears later stays closed to
// tenants until it is listed here.
func tenantDecision(method, path string, q url.Values, me string) decision {
	deny := decision{deny: notForTenants}
	rest, ok := strings.CutPrefix(path, "/v1/")
	if !ok || me == "" {
		return deny
	}
	seg := strings.Split(rest, "/")
	for _, s := range seg {
		if s == "" || s == "." || s == ".." {
			return deny
		}
	}
	get := method == http.MethodGet
	switch {
	case get && len(seg) == 1 && seg[0] == "tenants" && len(q) == 0:
		return decision{path: "/v1/tenants/" + me, filter: ownTenantList}
	case seg[0] == "tenants" && len(seg) >= 2:
		if seg[1] != me || len(q) != 0 {
			return decision{deny: "a tenant session sees its own tenant only"}
		}
		switch {
		case get && len(seg) == 2:
		case get && len(seg) == 3 && (seg[2] == "buckets" || seg[2] == "usage" || seg[2] == "quota" || seg[2] == "keys"):
		case method == http.MethodPost && len(seg) == 3 && seg[2] == "keys":
		case method == http.MethodDelete && len(seg) == 4 && seg[2] == "keys":
		default:
			return deny
		}
		return decision{path: "/v1/" + strings.Join(seg, "/")}
	case get && len(seg) == 1 && seg[0] == "policies" && len(q) == 0:
		return decision{path: "/v1/policies", filter: ownPolicies}
	case get && len(seg) == 1 && seg[0] == "explain":
		out := url.Values{}
		for k, vs := range q {
			switch k {
			case "tenant":
				if len(vs) != 1 || vs[0] != me {
					return decision{deny: "a tenant session explains its own objects only"}
				}
			case "bucket", "key", "size", "type":
				if len(vs) != 1 {
					return deny
				}
				out.Set(k, vs[0])
			default:
				return decision{deny: fmt.Sprintf("unknown parameter %q", k)}
			}
		}
		out.Set("tenant", me)
		return decision{path: "/v1/explain", query: out.Encode()}
	case get && len(seg) == 1 && seg[0] == "openapi.json" && len(q) == 0:
		return decision{path: "/v1/openapi.json"} // the API's description, the same for everyone
	case get && len(seg) == 1 && seg[0] == "metrics" && len(q) == 0:
		return decision{path: "/v1/metrics"} // the registry: names and units, no one's values
	case get && len(seg) == 2 && seg[0] == "metrics":
		p := "/v1/metrics/" + seg[1]
		switch {
		case len(q) == 0:
			return decision{path: p, filter: ownMetricValues}
		case len(q) == 1 && len(q["target"]) == 1:
			t, err := metrics.ParseTarget(q.Get("target"))
			if err != nil || t.Tenant != me {
				return decision{deny: "a tenant session reads its own metrics only"}
			}
			return decision{path: p, query: url.Values{"target": {t.String()}}.Encode()}
		}
		return deny
	case get && len(seg) == 1 && seg[0] == "slos" && len(q) == 0:
		return decision{path: "/v1/slos", filter: ownItems}
	case get && len(seg) == 2 && seg[0] == "slos" && len(q) == 0:
		if seg[1] != me {
			return decision{deny: "a tenant session sees its own SLO only"}
		}
		return decision{path: "/v1/slos/" + me}
	case seg[0] == "trash" && len(seg) >= 2:
		return trashDecision(method, seg, q, me)
	}
	return deny
}

// trashDecision lets a tenant list its own recycle bin and restore from
// it (issue 12). Purging stays the admin's: the bin is also what undoes
// the deletions of a leaked key, which must not be able to empty it.
func trashDecision(method string, seg []string, q url.Values, me string) decision {
	if seg[1] != me {
		return decision{deny: "a tenant sees its own recycle bin only"}
	}
	switch {
	case method == http.MethodGet && len(seg) == 2 && len(q) == 0:
		return decision{path: "/v1/trash/" + me}
	case method == http.MethodPost && len(seg) == 4 && seg[3] == "restore":
		out := url.Values{}
		for k, vs := range q {
			if k != "overwrite" || len(vs) != 1 {
				return decision{deny: fmt.Sprintf("unknown parameter %q", k)}
			}
			out.Set(k, vs[0])
		}
		return decision{path: "/v1/trash/" + me + "/" + seg[2] + "/restore", query: out.Encode()}
	case method == http.MethodDelete && len(seg) == 3:
		return decision{deny: "purging the recycle bin is for the administrator"}
	}
	return decision{deny: notForTenants}
}

// ownTenantList answers GET /tenants with the tenant alone.
func ownTenantList(_ *http.Request, _ *UI, _ string, body []byte) (any, error) {
	var t json.RawMessage
	if err := json.Unmarshal(body, &t); err != nil {
		return nil, err
	}
	return map[string]any{"tenants": []json.RawMessage{t}}, nil
}

// ownMetricValues keeps the values of the tenant's own targets.
func ownMetricValues(_ *http.Request, _ *UI, me string, body []byte) (any, error) {
	var mv struct {
		Metric        string          `json:"metric"`
		Unit          string          `json:"unit"`
		Period        json.RawMessage `json:"period,omitempty"`
		PeriodSeconds float64         `json:"period_seconds"`
		Nodes         int             `json:"nodes"`
		Values        []struct {
			Target string  `json:"target"`
			Value  float64 `json:"value"`
		} `json:"values"`
	}
	if err := json.Unmarshal(body, &mv); err != nil {
		return nil, err
	}
	kept := mv.Values[:0]
	for _, v := range mv.Values {
		if t, err := metrics.ParseTarget(v.Target); err == nil && t.Tenant == me {
			kept = append(kept, v)
		}
	}
	mv.Values = kept
	return mv, nil
}

// ownItems keeps, in every list of the answer, the items whose "tenant"
// is the session's; items without one are dropped, as are fields that are
// not lists (they might summarise everyone).
func ownItems(_ *http.Request, _ *UI, me string, body []byte) (any, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, err
	}
	out := map[string]any{}
	for k, raw := range top {
		var items []map[string]any
		if json.Unmarshal(raw, &items) != nil {
			continue
		}
		kept := []map[string]any{}
		for _, it := range items {
			if t, _ := it["tenant"].(string); t == me {
				kept = append(kept, it)
			}
		}
		out[k] = kept
	}
	return out, nil
}

// ownPolicies keeps the policies a tenant may read (see visibility).
func ownPolicies(r *http.Request, u *UI, me string, body []byte) (any, error) {
	var list struct {
		Policies []admin.Policy `json:"policies"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, err
	}
	vis := u.newVisibility(r.Context(), me)
	out := []admin.Policy{}
	for _, p := range list.Policies {
		switch vis.of(p.Text) {
		case visFull:
			out = append(out, p)
		case visRedacted:
			out = append(out, redact(p))
		}
	}
	return map[string]any{"policies": out}, nil
}
