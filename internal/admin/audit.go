package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/facet-sds/facet/internal/audit"
)

// AuditLog is the audit log the API writes to and reads back
// (audit.Log).
type AuditLog interface {
	Record(audit.Record)
	Tail(ctx context.Context, n int, offset int64) ([][]byte, int64, error)
}

var _ AuditLog = (*audit.Log)(nil)

// AuditTail is the body of GET /audit: lines of the audit log, each a
// JSON object as written, and the offset to ask from next (?offset=).
type AuditTail struct {
	Lines []json.RawMessage `json:"lines"`
	Next  int64             `json:"next"`
}

// auditNote lets a handler name what the path does not (the tenant a
// POST /tenants creates) for the request's audit record.
type auditNote struct{ tenant string }

type auditNoteKey struct{}

func noteTenant(r *http.Request, tenant string) {
	if n, ok := r.Context().Value(auditNoteKey{}).(*auditNote); ok {
		n.tenant = tenant
	}
}

// Caller is who an in-process caller (the dashboard, the tenant-signed
// API) makes a request for, since it calls with the admin token: the
// audit record then names the tenant and its access key.
type Caller struct {
	Tenant, AccessKey string
}

type callerKey struct{}

// OnBehalfOf marks requests made with ctx as c's. Only in-process callers
// can set it.
func OnBehalfOf(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// operationIDs maps "METHOD /v1/path" route patterns to the OpenAPI
// document's operationId, the name audit records give an admin action.
func operationIDs() map[string]string {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	out := map[string]string{}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		return out // TestOpenAPIOperationIDs keeps the document readable
	}
	for path, ops := range doc.Paths {
		for method, raw := range ops {
			var op struct {
				ID string `json:"operationId"`
			}
			if json.Unmarshal(raw, &op) != nil || op.ID == "" {
				continue
			}
			for _, p := range prefixes {
				out[strings.ToUpper(method)+" "+p+path] = op.ID
			}
		}
	}
	return out
}

// audited reports whether an admin request belongs in the audit log:
// every action (a method other than GET and HEAD) and every refusal for
// who the client is. Reads are not recorded: the dashboard polls them.
func audited(r *http.Request, status int) bool {
	if audit.ResultOf(status) == audit.ResultDenied {
		return true
	}
	return r.Method != http.MethodGet && r.Method != http.MethodHead && r.URL.Path != "/healthz"
}

func (h *handler) record(r *http.Request, status int, reqID string, note *auditNote) {
	op := h.opIDs[r.Pattern]
	if op == "" {
		op = "-" // no route: 404, 405, or refused before routing
		if r.URL.Path == "/metrics" {
			op = "metrics"
		}
	}
	rec := audit.Record{Kind: audit.KindAdmin, RequestID: reqID, Source: r.RemoteAddr, Op: op, Method: r.Method,
		Path: r.URL.Path, Query: audit.RedactQuery(r.URL.RawQuery), Result: audit.ResultOf(status), Status: status}
	if rec.Result != audit.ResultDenied {
		rec.Actor = "admin"
	}
	if c, ok := r.Context().Value(callerKey{}).(Caller); ok {
		rec.Actor, rec.Tenant, rec.AccessKey = "tenant", c.Tenant, c.AccessKey
	}
	if rec.Tenant == "" {
		rec.Tenant = note.tenant
	}
	if rec.Tenant == "" && strings.Contains(r.Pattern, "{name}") {
		rec.Tenant = r.PathValue("name")
	}
	h.audit.Record(rec)
}

func (h *handler) auditTail(w http.ResponseWriter, r *http.Request) error {
	if h.audit == nil {
		return apiErr(http.StatusNotImplemented, "NotImplemented", "no audit log: start the server with --audit-log PATH")
	}
	n, offset := 100, int64(-1)
	q := r.URL.Query()
	if v := q.Get("n"); v != "" {
		x, err := strconv.Atoi(v)
		if err != nil || x < 0 || x > 100000 {
			return apiErr(http.StatusBadRequest, "InvalidArgument", "n: want a number of lines from 0 to 100000")
		}
		n = x
	}
	if v := q.Get("offset"); v != "" {
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil || x < 0 {
			return apiErr(http.StatusBadRequest, "InvalidArgument", "offset: want a byte offset, 0 or more")
		}
		offset = x
	}
	lines, next, err := h.audit.Tail(r.Context(), n, offset)
	if errors.Is(err, audit.ErrNoFile) {
		return apiErr(http.StatusConflict, "AuditToStdout", err.Error())
	}
	if err != nil {
		return err
	}
	out := AuditTail{Lines: make([]json.RawMessage, 0, len(lines)), Next: next}
	for _, l := range lines {
		out.Lines = append(out.Lines, l)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
