package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/meta"
)

// fakeFilters records what the API hands the registration service.
type fakeFilters struct {
	desc, code []byte
	name       string
	force      bool
	err        error
	dep        Dependency
}

func (f *fakeFilters) CreateFilter(_ context.Context, d, m []byte) (FilterInfo, error) {
	f.desc, f.code = d, m
	return FilterInfo{Name: "x", Version: 1, Kind: "wasm"}, f.err
}

func (f *fakeFilters) UpdateFilter(_ context.Context, name string, d, m []byte) (FilterInfo, error) {
	f.name, f.desc, f.code = name, d, m
	return FilterInfo{Name: name, Version: 2, Kind: "wasm"}, f.err
}

func (f *fakeFilters) DeleteFilter(_ context.Context, name string, force bool) error {
	f.name, f.force = name, force
	return f.err
}

func (f *fakeFilters) PutDependency(_ context.Context, d Dependency, data []byte) (Dependency, error) {
	f.dep, f.code = d, data
	d.Size = int64(len(data))
	return d, f.err
}

func (f *fakeFilters) ListDependencies(context.Context) ([]Dependency, error) {
	return []Dependency{{Name: "mine", Owner: "acme"}, {Name: "shared"}, {Name: "theirs", Owner: "other"}}, f.err
}

func (f *fakeFilters) GetDependency(_ context.Context, name string) (Dependency, error) {
	if name != "theirs" {
		return Dependency{}, fmt.Errorf("%w: %q", meta.ErrDependencyNotFound, name)
	}
	return Dependency{Name: "theirs", Owner: "other"}, f.err
}

func (f *fakeFilters) DeleteDependency(_ context.Context, name string) error {
	f.name = name
	return f.err
}

// filterPolicies lists a native, an administrator's and two tenants' filters.
type filterPolicies struct{ PolicyService }

func (filterPolicies) Filters(context.Context) ([]FilterInfo, error) {
	return []FilterInfo{{Name: "noop", Kind: "native"}, {Name: "market", Kind: "wasm"},
		{Name: "mine", Kind: "wasm", Owner: "acme"}, {Name: "theirs", Kind: "wasm", Owner: "other"}}, nil
}

func multipartBody(t *testing.T, parts map[string]string) (string, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, k := range []string{"descriptor", "module", "data", "junk"} {
		if v, ok := parts[k]; ok {
			w, err := mw.CreateFormField(k)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = w.Write([]byte(v))
		}
	}
	_ = mw.Close()
	return b.String(), mw.FormDataContentType()
}

func filterHandler(ff *fakeFilters) http.Handler {
	return New(Config{Token: token, Policies: filterPolicies{}, Filters: ff})
}

func call(h http.Handler, method, path, body, ct string) response {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

func TestFilterUploads(t *testing.T) {
	ff := &fakeFilters{}
	h := filterHandler(ff)
	body, ct := multipartBody(t, map[string]string{"descriptor": `{"name":"x"}`, "module": "\x00asm"})
	if r := call(h, "POST", "/v1/filters", body, ct); r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	if string(ff.desc) != `{"name":"x"}` || string(ff.code) != "\x00asm" {
		t.Fatalf("got %q %q", ff.desc, ff.code)
	}
	body, ct = multipartBody(t, map[string]string{"descriptor": `{"name":"x"}`})
	wantError(t, call(h, "POST", "/v1/filters", body, ct), 400, "InvalidFilter")
	body, ct = multipartBody(t, map[string]string{"descriptor": `{}`, "junk": "x"})
	wantError(t, call(h, "POST", "/v1/filters", body, ct), 400, "InvalidFilter")
	wantError(t, call(h, "POST", "/v1/filters", "x", "text/plain"), 415, "UnsupportedMediaType")

	// Update: a bare descriptor, or bare code at /data.
	if r := call(h, "PUT", "/v1/filters/x", `{"doc":"d"}`, "application/json"); r.status != 200 || ff.code != nil || string(ff.desc) != `{"doc":"d"}` {
		t.Fatalf("update descriptor: %d %s %q", r.status, r.body, ff.code)
	}
	if r := call(h, "PUT", "/v1/filters/x/data", "\x00asm2", "application/wasm"); r.status != 200 || ff.desc != nil || string(ff.code) != "\x00asm2" {
		t.Fatalf("update code: %d %s", r.status, r.body)
	}
	if r := call(h, "DELETE", "/v1/filters/x?force=true", "", ""); r.status != 204 || !ff.force || ff.name != "x" {
		t.Fatalf("delete: %d %v", r.status, ff.force)
	}
	wantError(t, call(h, "DELETE", "/v1/filters/x?force=maybe", "", ""), 400, "InvalidInput")

	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("%w: methods: bad", ErrInvalidInput), 400, "InvalidFilter"},
		{fmt.Errorf("%w: used by policies p1", ErrConflict), 409, "FilterConflict"},
		{fmt.Errorf("x: %w: %q", meta.ErrFilterNotFound, "x"), 404, "NoSuchFilter"},
		{fmt.Errorf("x: %w: %q", meta.ErrDependencyNotFound, "d"), 404, "NoSuchDependency"},
	} {
		ff.err = tc.err
		r := call(h, "DELETE", "/v1/filters/x", "", "")
		wantError(t, r, tc.status, tc.code)
		if tc.status == 409 && !strings.Contains(string(r.body), "used by policies p1") {
			t.Errorf("the reason is lost: %s", r.body)
		}
	}
}

func TestFilterVisibility(t *testing.T) {
	h := filterHandler(&fakeFilters{})
	names := func(path string) []string {
		r := call(h, "GET", path, "", "")
		var fl FilterList
		decodeStrict(t, r.body, &fl)
		var out []string
		for _, f := range fl.Filters {
			out = append(out, f.Name)
		}
		return out
	}
	if got := names("/v1/filters"); len(got) != 4 {
		t.Fatalf("the administrator sees %v", got)
	}
	if got := names("/v1/filters?tenant=acme"); !slices.Equal(got, []string{"noop", "market", "mine"}) {
		t.Fatalf("acme sees %v", got)
	}
	if r := call(h, "GET", "/v1/filters/theirs?tenant=acme", "", ""); r.status != 404 {
		t.Fatalf("another tenant's filter: %d", r.status)
	}
	if r := call(h, "GET", "/v1/filters/theirs?tenant=other", "", ""); r.status != 200 {
		t.Fatalf("its owner: %d", r.status)
	}
	r := call(h, "GET", "/v1/filters/dependencies?tenant=acme", "", "")
	var dl DependencyList
	decodeStrict(t, r.body, &dl)
	if len(dl.Dependencies) != 2 {
		t.Fatalf("acme's dependencies %+v", dl)
	}
	wantError(t, call(h, "GET", "/v1/filters/dependencies/theirs?tenant=acme", "", ""), 404, "NoSuchDependency")
}

func TestDependencyUpload(t *testing.T) {
	ff := &fakeFilters{}
	h := filterHandler(ff)
	body, ct := multipartBody(t, map[string]string{"descriptor": `{"name":"dict","owner":"acme"}`, "data": "words"})
	r := call(h, "POST", "/v1/filters/dependencies", body, ct)
	if r.status != 201 || ff.dep.Name != "dict" || ff.dep.Owner != "acme" || string(ff.code) != "words" {
		t.Fatalf("%d %s %+v", r.status, r.body, ff.dep)
	}
	body, ct = multipartBody(t, map[string]string{"descriptor": `{"name":"dict","color":"red"}`, "data": "w"})
	wantError(t, call(h, "POST", "/v1/filters/dependencies", body, ct), 400, "InvalidFilter")
	if r := call(h, "DELETE", "/v1/filters/dependencies/dict", "", ""); r.status != 204 || ff.name != "dict" {
		t.Fatalf("delete: %d", r.status)
	}
	// Without a registration service the routes answer 501.
	h = New(Config{Token: token})
	wantError(t, call(h, "POST", "/v1/filters", body, ct), 501, "NotImplemented")
}

// The new wire types have schemas that list exactly their fields.
func TestFilterSchemas(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{Dependency{}, DependencyList{}, DependencyDescriptor{}, FilterInfo{}} {
		typ := reflect.TypeOf(v)
		var fields, props []string
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			fields = append(fields, name)
		}
		for p := range doc.Components.Schemas[typ.Name()].Properties {
			props = append(props, p)
		}
		slices.Sort(fields)
		slices.Sort(props)
		if !slices.Equal(fields, props) {
			t.Errorf("%s: fields %v, schema %v", typ.Name(), fields, props)
		}
	}
}
