package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"time"

	"github.com/facet-sds/facet/internal/meta"
)

// FilterAdmin registers filters at run time (WebAssembly modules with a
// JSON descriptor, docs/filters.md) and the read-only dependency files
// they mount. Errors wrapping ErrInvalidInput are answered 400,
// ErrConflict 409, meta.ErrFilterNotFound and meta.ErrDependencyNotFound
// 404, each with its message, which must therefore hold nothing secret.
type FilterAdmin interface {
	// CreateFilter registers a new filter: version 1.
	CreateFilter(ctx context.Context, descriptor, module []byte) (FilterInfo, error)
	// UpdateFilter makes a new version of a filter. A nil descriptor keeps
	// the description, a nil module the code. Requests already running
	// keep the version they started with.
	UpdateFilter(ctx context.Context, name string, descriptor, module []byte) (FilterInfo, error)
	// DeleteFilter unregisters a filter. A reversible filter's objects
	// cannot be read back without it: deleting one takes force.
	DeleteFilter(ctx context.Context, name string, force bool) error
	// PutDependency creates or replaces a dependency file.
	PutDependency(ctx context.Context, d Dependency, data []byte) (Dependency, error)
	ListDependencies(ctx context.Context) ([]Dependency, error)
	GetDependency(ctx context.Context, name string) (Dependency, error)
	DeleteDependency(ctx context.Context, name string) error
}

// ErrConflict marks a FilterAdmin error caused by the state of the
// registry (a name in use, a filter policies still use); answered 409.
var ErrConflict = errors.New("conflict")

// Dependency describes a dependency file.
type Dependency struct {
	Name string `json:"name"`
	// Owner is the tenant whose filters alone may mount it; empty for an
	// administrator's, which every filter may mount.
	Owner   string    `json:"owner,omitempty"`
	Doc     string    `json:"doc,omitempty"`
	SHA256  string    `json:"sha256,omitempty"`
	Size    int64     `json:"size"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// DependencyList is the body of GET /filters/dependencies.
type DependencyList struct {
	Dependencies []Dependency `json:"dependencies"`
}

// maxModule bounds an uploaded module or dependency file (the metadata
// store's blob limit).
const maxModule = 64 << 20

var errNoFilterAdmin = apiErr(http.StatusNotImplemented, "NotImplemented", "run-time filter registration is not enabled on this server")

// visibleTo keeps what tenant may see: native and administrators'
// filters, and its own. An empty tenant (the administrator's view) sees
// everything.
func visibleTo(tenant string, fs []FilterInfo) []FilterInfo {
	if tenant == "" {
		return fs
	}
	out := fs[:0:0]
	for _, f := range fs {
		if f.Owner == "" || f.Owner == tenant {
			out = append(out, f)
		}
	}
	return out
}

// filterError answers the FilterAdmin's errors.
func filterError(err error, name string) error {
	switch {
	case errors.Is(err, ErrInvalidInput):
		return apiErr(http.StatusBadRequest, "InvalidFilter", detail(err, ErrInvalidInput))
	case errors.Is(err, ErrConflict):
		return apiErr(http.StatusConflict, "FilterConflict", detail(err, ErrConflict))
	case errors.Is(err, meta.ErrFilterNotFound):
		return apiErr(http.StatusNotFound, "NoSuchFilter", fmt.Sprintf("filter %q does not exist", name))
	case errors.Is(err, meta.ErrDependencyNotFound):
		return apiErr(http.StatusNotFound, "NoSuchDependency", detail(err, meta.ErrDependencyNotFound))
	case errors.Is(err, meta.ErrTenantNotFound):
		return apiErr(http.StatusBadRequest, "NoSuchTenant", detail(err, meta.ErrTenantNotFound))
	}
	return err
}

// upload reads a filter upload: multipart/form-data with a "descriptor"
// part (JSON) and a "module" part (the .wasm), either optional as the
// operation allows; or a bare JSON descriptor (application/json); or a
// bare module (application/wasm or application/octet-stream).
func upload(w http.ResponseWriter, r *http.Request, dataPart string) (descriptor, data []byte, err error) {
	body := http.MaxBytesReader(w, r.Body, maxModule+maxBody+64<<10)
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "multipart/form-data":
		mr := multipart.NewReader(body, params["boundary"])
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				return descriptor, data, nil
			}
			if err != nil {
				return nil, nil, uploadErr(err)
			}
			switch part.FormName() {
			case "descriptor":
				if descriptor, err = readLimited(part, maxBody, "descriptor"); err != nil {
					return nil, nil, err
				}
			case dataPart:
				if data, err = readLimited(part, maxModule, dataPart); err != nil {
					return nil, nil, err
				}
				if data == nil {
					data = []byte{}
				}
			default:
				return nil, nil, apiErr(http.StatusBadRequest, "InvalidFilter",
					fmt.Sprintf("unexpected form part %q: want descriptor and %s", part.FormName(), dataPart))
			}
		}
	case "application/json":
		descriptor, err = readLimited(body, maxBody, "descriptor")
		return descriptor, nil, err
	case "application/wasm", "application/octet-stream":
		data, err = readLimited(body, maxModule, dataPart)
		return nil, data, err
	}
	return nil, nil, apiErr(http.StatusUnsupportedMediaType, "UnsupportedMediaType",
		"want multipart/form-data (descriptor and "+dataPart+" parts), application/json or application/wasm")
}

func readLimited(r io.Reader, limit int64, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, uploadErr(err)
	}
	if int64(len(b)) > limit {
		return nil, apiErr(http.StatusRequestEntityTooLarge, "BodyTooLarge", fmt.Sprintf("%s over %d bytes", what, limit))
	}
	return b, nil
}

func uploadErr(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return apiErr(http.StatusRequestEntityTooLarge, "BodyTooLarge", fmt.Sprintf("request body over %d bytes", mbe.Limit))
	}
	return apiErr(http.StatusBadRequest, "InvalidFilter", "malformed upload: "+err.Error())
}

func (h *handler) createFilter(w http.ResponseWriter, r *http.Request) error {
	if h.filters == nil {
		return errNoFilterAdmin
	}
	desc, mod, err := upload(w, r, "module")
	if err != nil {
		return err
	}
	if desc == nil || mod == nil {
		return apiErr(http.StatusBadRequest, "InvalidFilter", "a new filter needs a descriptor part and a module part")
	}
	in, err := h.filters.CreateFilter(r.Context(), desc, mod)
	if err != nil {
		return filterError(err, "")
	}
	writeJSON(w, http.StatusCreated, in)
	return nil
}

func (h *handler) updateFilter(w http.ResponseWriter, r *http.Request) error {
	if h.filters == nil {
		return errNoFilterAdmin
	}
	desc, mod, err := upload(w, r, "module")
	if err != nil {
		return err
	}
	if desc == nil && mod == nil {
		return apiErr(http.StatusBadRequest, "InvalidFilter", "an update needs a descriptor, a module, or both")
	}
	name := r.PathValue("filter")
	in, err := h.filters.UpdateFilter(r.Context(), name, desc, mod)
	if err != nil {
		return filterError(err, name)
	}
	writeJSON(w, http.StatusOK, in)
	return nil
}

// uploadFilterData is PUT /filters/{filter}/data: new code, same
// description (the sources' "upload a filter's logic").
func (h *handler) uploadFilterData(w http.ResponseWriter, r *http.Request) error {
	if h.filters == nil {
		return errNoFilterAdmin
	}
	mod, err := readLimited(http.MaxBytesReader(w, r.Body, maxModule+1), maxModule, "module")
	if err != nil {
		return err
	}
	name := r.PathValue("filter")
	in, err := h.filters.UpdateFilter(r.Context(), name, nil, mod)
	if err != nil {
		return filterError(err, name)
	}
	writeJSON(w, http.StatusOK, in)
	return nil
}

func (h *handler) deleteFilter(w http.ResponseWriter, r *http.Request) error {
	if h.filters == nil {
		return errNoFilterAdmin
	}
	name := r.PathValue("filter")
	force := false
	switch v := r.URL.Query().Get("force"); v {
	case "", "false":
	case "true":
		force = true
	default:
		return apiErr(http.StatusBadRequest, "InvalidInput", fmt.Sprintf("force=%q: want true or false", v))
	}
	if err := h.filters.DeleteFilter(r.Context(), name, force); err != nil {
		return filterError(err, name)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// DependencyDescriptor is the descriptor part of a dependency upload.
type DependencyDescriptor struct {
	Name  string `json:"name"`
	Owner string `json:"owner,omitempty"`
	Doc   string `json:"doc,omitempty"`
}

func (h *handler) putDependency(w http.ResponseWriter, r *http.Request) error {
	if h.filters == nil {
		return errNoFilterAdmin
	}
	desc, data, err := upload(w, r, "data")
	if err != nil {
		return err
	}
	if desc == nil || data == nil {
		return apiErr(http.StatusBadRequest, "InvalidFilter", "a dependency needs a descriptor part and a data part")
	}
	var dd DependencyDescriptor
	if err := decodeJSONStrict(desc, &dd); err != nil {
		return apiErr(http.StatusBadRequest, "InvalidFilter", "dependency descriptor: "+err.Error())
	}
	d, err := h.filters.PutDependency(r.Context(), Dependency{Name: dd.Name, Owner: dd.Owner, Doc: dd.Doc}, data)
	if err != nil {
		return filterError(err, "")
	}
	writeJSON(w, http.StatusCreated, d)
	return nil
}

func (h *handler) listDependencies(w http.ResponseWriter, r *http.Request) error {
	if h.filters == nil {
		return errNoFilterAdmin
	}
	ds, err := h.filters.ListDependencies(r.Context())
	if err != nil {
		return err
	}
	tenant := r.URL.Query().Get("tenant")
	out := DependencyList{Dependencies: []Dependency{}}
	for _, d := range ds {
		if tenant == "" || d.Owner == "" || d.Owner == tenant {
			out.Dependencies = append(out.Dependencies, d)
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handler) getDependency(w http.ResponseWriter, r *http.Request) error {
	if h.filters == nil {
		return errNoFilterAdmin
	}
	d, err := h.filters.GetDependency(r.Context(), r.PathValue("dep"))
	if err == nil {
		if t := r.URL.Query().Get("tenant"); t != "" && d.Owner != "" && d.Owner != t {
			err = fmt.Errorf("%w: %q", meta.ErrDependencyNotFound, d.Name)
		}
	}
	if err != nil {
		return filterError(err, "")
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

func (h *handler) deleteDependency(w http.ResponseWriter, r *http.Request) error {
	if h.filters == nil {
		return errNoFilterAdmin
	}
	if err := h.filters.DeleteDependency(r.Context(), r.PathValue("dep")); err != nil {
		return filterError(err, "")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// decodeJSONStrict decodes one JSON object, refusing unknown fields.
func decodeJSONStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the object")
	}
	return nil
}

// UploadBody encodes a filter or dependency upload as the API takes it:
// multipart/form-data with a JSON "descriptor" part and, when data is not
// nil, a binary part named dataPart ("module" or "data"). It returns the
// body and its Content-Type; clients (facet ctl, the benchmarks) use it.
func UploadBody(descriptor any, dataPart string, data []byte) ([]byte, string, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	d, err := json.Marshal(descriptor)
	if err != nil {
		return nil, "", err
	}
	if err := mw.WriteField("descriptor", string(d)); err != nil {
		return nil, "", err
	}
	if data != nil {
		w, err := mw.CreateFormFile(dataPart, dataPart)
		if err != nil {
			return nil, "", err
		}
		if _, err := w.Write(data); err != nil {
			return nil, "", err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, "", err
	}
	return body.Bytes(), mw.FormDataContentType(), nil
}
