package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/flowctx"
	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/sysdev"
)

type fakeLocator map[string]storage.Location

func (f fakeLocator) Locate(_ context.Context, bucket, key string) (storage.Location, error) {
	if bucket != "b1" {
		return storage.Location{}, fmt.Errorf("x: %w", storage.ErrBucketNotFound)
	}
	l, ok := f[key]
	if !ok {
		return storage.Location{}, fmt.Errorf("x: %w", storage.ErrObjectNotFound)
	}
	return l, nil
}

func TestLocality(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	if _, _, err := f.store.CreateTenantWithKey(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if err := f.store.ClaimBucket(ctx, "t1", "b1"); err != nil {
		t.Fatal(err)
	}
	loc := fakeLocator{"dir/a b": {Kind: "fs", StoredSize: 5, FS: &sysdev.Placement{Path: "/d/x", Mount: sysdev.Mount{Point: "/"}}}}
	f.h = New(Config{Store: f.store, Token: token, Locality: loc, Node: "n1", Nodes: LocalNode("n1", nil, nil)})

	r := f.do(t, http.MethodGet, "/v1/locality/b1/dir/a%20b?tenant=t1", "")
	var got Locality
	if err := json.Unmarshal(r.body, &got); r.status != http.StatusOK || err != nil {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if got.Tenant != "t1" || got.Node != "n1" || got.Key != "dir/a b" || got.Kind != "fs" || got.FS.Path != "/d/x" || got.StoredSize != 5 {
		t.Fatalf("%+v", got)
	}
	for path, code := range map[string]string{
		"/v1/locality/b1/missing":             "NoSuchKey",
		"/v1/locality/nob/k":                  "NoSuchBucket",
		"/v1/locality/b1/dir/a%20b?tenant=t2": "NoSuchBucket",
	} {
		r := f.do(t, http.MethodGet, path, "")
		if r.status != http.StatusNotFound || !strings.Contains(string(r.body), code) {
			t.Errorf("%s: %d %s", path, r.status, r.body)
		}
	}
	r = f.do(t, http.MethodGet, "/v1/nodes", "")
	var nl NodeList
	if err := json.Unmarshal(r.body, &nl); err != nil || len(nl.Nodes) != 1 || nl.Nodes[0].Backend != "remote" || nl.Nodes[0].Note == "" {
		t.Fatalf("%d %s", r.status, r.body)
	}

	// Without a locator or node source: 501, not a pretence.
	f.h = New(Config{Store: f.store, Token: token})
	for _, p := range []string{"/v1/locality/b1/dir/a%20b", "/v1/nodes"} {
		if r := f.do(t, http.MethodGet, p, ""); r.status != http.StatusNotImplemented {
			t.Errorf("%s: %d", p, r.status)
		}
	}
}

// The schemas of this file's wire types list exactly their JSON fields.
func TestLocalitySchemas(t *testing.T) {
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
	for _, v := range []any{Locality{}, Node{}, NodeCache{}, NodeList{}, sysdev.Placement{}, sysdev.Mount{}, sysdev.Device{}, storage.RemoteLocation{}, storage.IOStatus{},
		flowctx.Rules{}, flowctx.Rule{}, ContextFlows{}, flowctx.FlowStats{}, VolumeLocality{}, VolumeMember{}} {
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
			t.Errorf("%s: Go fields %v, schema properties %v", typ.Name(), fields, props)
		}
	}
}
