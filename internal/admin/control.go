package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/facet-sds/facet/internal/meta"
)

// Wire types of the control plane's resources: groups, policies, filters,
// data keys and usage. Like those of routes.go, they are the API's contract.

// CreateGroupRequest is the body of POST /groups.
type CreateGroupRequest struct {
	Name    string   `json:"name"`
	Members []string `json:"members"`
}

// GroupMembersRequest is the body of POST /groups/{group}/members and
// POST /groups/{group}/members:remove.
type GroupMembersRequest struct {
	Members []string `json:"members"`
}

// Group is a named set of tenants ("t1") and buckets ("t1/photos").
type Group struct {
	Name    string    `json:"name"`
	Members []string  `json:"members"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// GroupList is the body of GET /groups.
type GroupList struct {
	Groups []Group `json:"groups"`
}

// PolicyText is the JSON form of a POST /policies or /policies:validate
// body; text/plain bodies are the text itself.
type PolicyText struct {
	Text string `json:"text"`
}

// Policy is a stored policy. Compiled, the compiler's output, is only in
// GET /policies/{id}.
type Policy struct {
	ID       string          `json:"id"`
	Seq      uint64          `json:"seq"`
	Name     string          `json:"name,omitempty"`
	Text     string          `json:"text"`
	Line     int             `json:"line"`
	State    string          `json:"state"`
	Reason   string          `json:"reason,omitempty"`
	Created  time.Time       `json:"created"`
	Compiled json.RawMessage `json:"compiled,omitempty"`
}

// PolicyList is the body of GET /policies, in declaration order.
type PolicyList struct {
	Policies []Policy `json:"policies"`
}

// PolicyApplied is the body of a successful POST /policies.
type PolicyApplied struct {
	Policies []Policy     `json:"policies"`
	Warnings []Diagnostic `json:"warnings"`
}

// FilterList is the body of GET /filters.
type FilterList struct {
	Filters []FilterInfo `json:"filters"`
}

// DataKeys is a tenant's data-key ids: new objects are sealed under
// Current, older ones stay readable under the ids of History.
type DataKeys struct {
	Tenant  string      `json:"tenant"`
	Current string      `json:"current"`
	History []DataKeyID `json:"history"`
}

// DataKeyID is one data-key id.
type DataKeyID struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
}

// TenantUsage is the body of GET /tenants/{name}/usage.
type TenantUsage struct {
	Tenant       string `json:"tenant"`
	StoredBytes  int64  `json:"stored_bytes"`
	LogicalBytes int64  `json:"logical_bytes"`
	Objects      int64  `json:"objects"`
	// SavedBytes is LogicalBytes - StoredBytes (negative when filters add
	// more than they save).
	SavedBytes int64 `json:"saved_bytes"`
	// Savings is SavedBytes / LogicalBytes (0 with no data).
	Savings float64 `json:"savings"`
}

var errNoPolicyService = apiErr(http.StatusNotImplemented, "NotImplemented", "this server has no policy service")

func groupOut(g meta.Group) Group {
	ms := g.Members
	if ms == nil {
		ms = []string{}
	}
	return Group{Name: g.Name, Members: ms, Created: g.Created, Updated: g.Updated}
}

func policyOut(p meta.Policy, withCompiled bool) Policy {
	out := Policy{
		ID: p.ID, Seq: p.Seq, Name: p.Name, Text: p.Text, Line: p.Line,
		State: string(p.State), Reason: p.Reason, Created: p.Created,
	}
	if withCompiled {
		out.Compiled = p.Compiled
	}
	return out
}

func dataKeysOut(dk meta.DataKeys) DataKeys {
	out := DataKeys{Tenant: dk.Tenant, Current: dk.Current, History: make([]DataKeyID, 0, len(dk.History))}
	for _, h := range dk.History {
		out.History = append(out.History, DataKeyID{ID: h.ID, Created: h.Created})
	}
	return out
}

// checkMembers validates group members before the store does, so that the
// error names the offending member.
func checkMembers(members []string, needOne bool) error {
	if needOne && len(members) == 0 {
		return apiErr(http.StatusBadRequest, "MissingMembers", "name at least one member")
	}
	for _, m := range members {
		if _, _, err := meta.SplitGroupMember(m); err != nil {
			return apiErr(http.StatusBadRequest, "InvalidGroupMember",
				fmt.Sprintf("invalid group member %q: want TENANT or TENANT/BUCKET", m))
		}
	}
	return nil
}

func (h *handler) createGroup(w http.ResponseWriter, r *http.Request) error {
	var req CreateGroupRequest
	if err := decodeBody(r, w, &req); err != nil {
		return err
	}
	if err := checkMembers(req.Members, false); err != nil {
		return err
	}
	g, err := h.store.CreateGroup(r.Context(), req.Name, req.Members)
	if err != nil {
		// The group name comes from the body, not the path.
		if ae := storeError(err, resource{group: req.Name}); ae.status < 500 {
			return ae
		}
		return err
	}
	writeJSON(w, http.StatusCreated, groupOut(g))
	return nil
}

func (h *handler) listGroups(w http.ResponseWriter, r *http.Request) error {
	gs, err := h.store.ListGroups(r.Context())
	if err != nil {
		return err
	}
	out := GroupList{Groups: make([]Group, 0, len(gs))}
	for _, g := range gs {
		out.Groups = append(out.Groups, groupOut(g))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handler) getGroup(w http.ResponseWriter, r *http.Request) error {
	g, err := h.store.GetGroup(r.Context(), r.PathValue("group"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, groupOut(g))
	return nil
}

func (h *handler) deleteGroup(w http.ResponseWriter, r *http.Request) error {
	if err := h.store.DeleteGroup(r.Context(), r.PathValue("group")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *handler) addGroupMembers(w http.ResponseWriter, r *http.Request) error {
	var req GroupMembersRequest
	if err := decodeBody(r, w, &req); err != nil {
		return err
	}
	if err := checkMembers(req.Members, true); err != nil {
		return err
	}
	g, err := h.store.AddGroupMembers(r.Context(), r.PathValue("group"), req.Members...)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, groupOut(g))
	return nil
}

func (h *handler) removeGroupMembers(w http.ResponseWriter, r *http.Request) error {
	var req GroupMembersRequest
	if err := decodeBody(r, w, &req); err != nil {
		return err
	}
	if err := checkMembers(req.Members, true); err != nil {
		return err
	}
	g, err := h.store.RemoveGroupMembers(r.Context(), r.PathValue("group"), req.Members...)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, groupOut(g))
	return nil
}

// readPolicyText reads a policy text given as text/plain (or without a
// content type) or as JSON {"text": ...}.
func readPolicyText(w http.ResponseWriter, r *http.Request) (string, error) {
	mt := "text/plain"
	if ct := r.Header.Get("Content-Type"); ct != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(ct); err != nil {
			return "", apiErr(http.StatusUnsupportedMediaType, "UnsupportedMediaType", "malformed Content-Type")
		}
	}
	var text string
	switch mt {
	case "application/json":
		var req PolicyText
		if err := decodeBodyLimit(r, w, &req, maxPolicyBody); err != nil {
			return "", err
		}
		text = req.Text
	case "text/plain":
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPolicyBody))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return "", apiErr(http.StatusRequestEntityTooLarge, "BodyTooLarge", fmt.Sprintf("request body over %d bytes", maxPolicyBody))
			}
			return "", apiErr(http.StatusBadRequest, "MalformedBody", "reading the body: "+err.Error())
		}
		if !utf8.Valid(b) {
			return "", apiErr(http.StatusBadRequest, "MalformedBody", "policy text is not UTF-8")
		}
		text = string(b)
	default:
		return "", apiErr(http.StatusUnsupportedMediaType, "UnsupportedMediaType",
			fmt.Sprintf("Content-Type %s: send text/plain or application/json", mt))
	}
	if strings.TrimSpace(text) == "" {
		return "", apiErr(http.StatusBadRequest, "MissingPolicyText", "no policy text")
	}
	return text, nil
}

// normalize makes a result's lists non-nil (JSON [] rather than null) and
// its Valid flag agree with its errors, whatever the service returned.
func normalize(res ValidateResult) ValidateResult {
	if res.Policies == nil {
		res.Policies = []PolicySummary{}
	}
	if res.Errors == nil {
		res.Errors = []Diagnostic{}
	}
	if res.Warnings == nil {
		res.Warnings = []Diagnostic{}
	}
	res.Valid = len(res.Errors) == 0
	return res
}

// invalidPolicy answers a text that did not validate: the first error as
// the message, every diagnostic alongside.
func invalidPolicy(res ValidateResult) *apiError {
	d := res.Errors[0]
	msg := d.Message
	if d.Line > 0 {
		msg = fmt.Sprintf("line %d:%d: %s", d.Line, d.Column, d.Message)
	}
	if n := len(res.Errors) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more error(s))", n)
	}
	return &apiError{status: http.StatusBadRequest, code: "InvalidPolicy", message: msg, errors: res.Errors, warnings: res.Warnings}
}

func (h *handler) applyPolicies(w http.ResponseWriter, r *http.Request) error {
	if h.policies == nil {
		return errNoPolicyService
	}
	text, err := readPolicyText(w, r)
	if err != nil {
		return err
	}
	ps, res, err := h.policies.Apply(r.Context(), text)
	if err != nil {
		return err
	}
	res = normalize(res)
	if !res.Valid {
		return invalidPolicy(res)
	}
	out := PolicyApplied{Policies: make([]Policy, 0, len(ps)), Warnings: res.Warnings}
	for _, p := range ps {
		out.Policies = append(out.Policies, policyOut(p, false))
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (h *handler) validatePolicies(w http.ResponseWriter, r *http.Request) error {
	if h.policies == nil {
		return errNoPolicyService
	}
	text, err := readPolicyText(w, r)
	if err != nil {
		return err
	}
	res, err := h.policies.Validate(r.Context(), text)
	if err != nil {
		return err
	}
	// 200 either way: the validation ran; its verdict is in the body.
	writeJSON(w, http.StatusOK, normalize(res))
	return nil
}

func (h *handler) listPolicies(w http.ResponseWriter, r *http.Request) error {
	ps, err := h.store.ListPolicies(r.Context())
	if err != nil {
		return err
	}
	out := PolicyList{Policies: make([]Policy, 0, len(ps))}
	for _, p := range ps {
		out.Policies = append(out.Policies, policyOut(p, false))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handler) getPolicy(w http.ResponseWriter, r *http.Request) error {
	p, err := h.store.GetPolicy(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, policyOut(p, true))
	return nil
}

func (h *handler) deletePolicy(w http.ResponseWriter, r *http.Request) error {
	if err := h.store.DeletePolicy(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *handler) explain(w http.ResponseWriter, r *http.Request) error {
	if h.policies == nil {
		return errNoPolicyService
	}
	q := r.URL.Query()
	for name := range q {
		switch name {
		case "tenant", "bucket", "key", "size", "type":
		default:
			return apiErr(http.StatusBadRequest, "InvalidParameter",
				fmt.Sprintf("unknown parameter %q: want tenant, bucket, key, size, type", name))
		}
	}
	eq := ExplainQuery{Tenant: q.Get("tenant"), Bucket: q.Get("bucket"), Key: q.Get("key"), Type: q.Get("type"), Size: -1}
	if eq.Tenant == "" {
		return apiErr(http.StatusBadRequest, "MissingParameter", "tenant is required")
	}
	if eq.Key != "" && eq.Bucket == "" {
		return apiErr(http.StatusBadRequest, "MissingParameter", "a key needs its bucket")
	}
	if s := q.Get("size"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return apiErr(http.StatusBadRequest, "InvalidParameter", fmt.Sprintf("size %q: want a number of bytes", s))
		}
		eq.Size = n
	}
	if _, err := h.store.GetTenant(r.Context(), eq.Tenant); err != nil {
		return tenantError(err, eq.Tenant)
	}
	ex, err := h.policies.Explain(r.Context(), eq)
	if err != nil {
		return err
	}
	if ex.Pipelines == nil {
		ex.Pipelines = []Pipeline{}
	}
	for i := range ex.Pipelines {
		if ex.Pipelines[i].Filters == nil {
			ex.Pipelines[i].Filters = []ExplainStep{}
		}
	}
	writeJSON(w, http.StatusOK, ex)
	return nil
}

// tenantError maps a store error about a tenant named outside the path.
func tenantError(err error, tenant string) error {
	if ae := storeError(err, resource{tenant: tenant}); ae.status < 500 {
		return ae
	}
	return err
}

func (h *handler) filterList(r *http.Request) ([]FilterInfo, error) {
	if h.policies == nil {
		return nil, errNoPolicyService
	}
	fs, err := h.policies.Filters(r.Context())
	if err != nil {
		return nil, err
	}
	if fs == nil {
		fs = []FilterInfo{}
	}
	return visibleTo(r.URL.Query().Get("tenant"), fs), nil
}

func (h *handler) listFilters(w http.ResponseWriter, r *http.Request) error {
	fs, err := h.filterList(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, FilterList{Filters: fs})
	return nil
}

func (h *handler) getFilter(w http.ResponseWriter, r *http.Request) error {
	fs, err := h.filterList(r)
	if err != nil {
		return err
	}
	name := r.PathValue("filter")
	for _, f := range fs {
		if f.Name == name {
			writeJSON(w, http.StatusOK, f)
			return nil
		}
	}
	return meta.ErrFilterNotFound
}

func (h *handler) dataKeys(w http.ResponseWriter, r *http.Request) error {
	dk, err := h.store.DataKeys(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, dataKeysOut(dk))
	return nil
}

func (h *handler) rotateDataKey(w http.ResponseWriter, r *http.Request) error {
	dk, err := h.store.RotateDataKey(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, dataKeysOut(dk))
	return nil
}

func (h *handler) tenantUsage(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if _, err := h.store.GetTenant(r.Context(), name); err != nil {
		return err
	}
	if h.usage == nil {
		return apiErr(http.StatusNotImplemented, "NotImplemented", "this server does not report usage")
	}
	u, err := h.usage.TenantUsage(r.Context(), name)
	if err != nil {
		return err
	}
	out := TenantUsage{
		Tenant: name, StoredBytes: u.StoredBytes, LogicalBytes: u.LogicalBytes, Objects: u.Objects,
		SavedBytes: u.LogicalBytes - u.StoredBytes,
	}
	if u.LogicalBytes > 0 {
		out.Savings = float64(out.SavedBytes) / float64(u.LogicalBytes)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
