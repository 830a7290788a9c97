package wasm

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/filter"
)

func TestParseDescriptor(t *testing.T) {
	d, err := ParseDescriptor([]byte(`{"name":"redact","methods":["put","get","PUT"],"stages":["storage","Gateway"],
		"params":[{"name":"max","type":"size","default":"1024"}],"dependencies":["dict","dict","abc"],"owner":"acme"}`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join([]string{string(d.Methods[0]), string(d.Methods[1])}, ",") != "GET,PUT" || len(d.Methods) != 2 {
		t.Errorf("methods %v", d.Methods)
	}
	if d.Stages[0] != filter.StageStorage || d.Stages[1] != filter.StageGateway {
		t.Errorf("stages %v: the given order is a policy's default", d.Stages)
	}
	if strings.Join(d.Dependencies, ",") != "abc,dict" {
		t.Errorf("dependencies %v", d.Dependencies)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"name":"x","methods":["PUT"],"stages":["gateway"],"extra":1}`, "unknown field"},
		{`{"name":"x","methods":["PUT"],"stages":["gateway"]} {}`, "trailing data"},
		{`{"name":"X","methods":["PUT"],"stages":["gateway"]}`, "invalid filter name"},
		{`{"name":"dependencies","methods":["PUT"],"stages":["gateway"]}`, "reserved"},
		{`{"name":"x","methods":[],"stages":["gateway"]}`, "methods"},
		{`{"name":"x","methods":["DELETE"],"stages":["gateway"]}`, `"DELETE" is not PUT or GET`},
		{`{"name":"x","methods":["GET"],"stages":["gateway"],"reversible":true}`, "must include PUT"},
		{`{"name":"x","methods":["PUT"],"stages":[]}`, "stages"},
		{`{"name":"x","methods":["PUT"],"stages":["proxy"]}`, `"proxy" is not gateway or storage`},
		{`{"name":"x","methods":["PUT"],"stages":["gateway"],"params":[{"name":"_size","type":"int"}]}`, "parameter name"},
		{`{"name":"x","methods":["PUT"],"stages":["gateway"],"params":[{"name":"a","type":"float"}]}`, `type "float"`},
		{`{"name":"x","methods":["PUT"],"stages":["gateway"],"params":[{"name":"a","type":"int"},{"name":"a","type":"int"}]}`, "twice"},
		{`{"name":"x","methods":["PUT"],"stages":["gateway"],"params":[{"name":"a","type":"int","default":"ten"}]}`, "default"},
		{`{"name":"x","methods":["PUT"],"stages":["gateway"],"params":[{"name":"a","type":"enum"}]}`, "needs its values"},
		{`{"name":"x","methods":["PUT"],"stages":["gateway"],"dependencies":["../etc"]}`, "dependency name"},
		{`{"name":"x","methods":["PUT"],"stages":["gateway"],"owner":"A B"}`, "invalid owner"},
	} {
		if _, err := ParseDescriptor([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.in, err, tc.want)
		}
	}
}

func FuzzParseDescriptor(f *testing.F) {
	f.Add([]byte(`{"name":"redact","methods":["PUT"],"stages":["gateway"],"params":[{"name":"k","type":"string","default":"v"}]}`))
	f.Add([]byte(`{"name":"x","methods":["PUT","GET"],"stages":["storage"],"reversible":true,"dependencies":["d"],"owner":"t1"}`))
	f.Add([]byte(`{"name":"x","methods":["PUT"],"stages":["gateway"],"params":[{"name":"n","type":"size","default":"5","min":1,"max":10}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDescriptor(b)
		if err != nil {
			return
		}
		// What was accepted is canonical: encoding and parsing it again
		// gives the same descriptor.
		enc, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		d2, err := ParseDescriptor(enc)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", enc, err)
		}
		enc2, _ := json.Marshal(d2)
		if string(enc) != string(enc2) {
			t.Fatalf("not canonical:\n%s\n%s", enc, enc2)
		}
	})
}

func TestUpdateKeepsReversibleVersions(t *testing.T) {
	d := Descriptor{Name: "x", Methods: []filter.Method{filter.MethodPut}, Stages: []filter.Stage{filter.StageGateway}, Reversible: true}
	v1, blob, drop, err := Update(nil, d, []byte("one"), nil)
	if err != nil || v1.Version != 1 || blob != BlobKey("x", 1) || drop != nil || len(v1.Modules) != 1 {
		t.Fatalf("v1 %+v %q %v %v", v1, blob, drop, err)
	}
	v2, blob, drop, err := Update(v1, d, []byte("two"), nil)
	if err != nil || v2.Version != 2 || blob != BlobKey("x", 2) || drop != nil || len(v2.Modules) != 2 {
		t.Fatalf("v2 %+v %q %v %v", v2, blob, drop, err)
	}
	// A description change keeps the code: same blob, new version.
	d.Doc = "new doc"
	v3, blob, _, err := Update(v2, d, nil, nil)
	if err != nil || blob != "" || v3.Version != 3 {
		t.Fatalf("v3 %+v %q %v", v3, blob, err)
	}
	if m, _ := v3.Module(3); m.Blob != BlobKey("x", 2) || m.SHA256 != Digest([]byte("two")) {
		t.Fatalf("v3 module %+v", m)
	}
	d.Reversible = false
	if _, _, _, err := Update(v3, d, []byte("x"), nil); err == nil {
		t.Fatal("a reversible filter became one-way")
	}
	// A one-way filter keeps only its current module.
	ow := Descriptor{Name: "y", Methods: []filter.Method{filter.MethodPut}, Stages: []filter.Stage{filter.StageGateway}}
	w1, _, _, _ := Update(nil, ow, []byte("one"), nil)
	w2, _, drop, _ := Update(w1, ow, []byte("two"), nil)
	if len(w2.Modules) != 1 || len(drop) != 1 || drop[0] != BlobKey("y", 1) {
		t.Fatalf("one-way update: %+v drop %v", w2.Modules, drop)
	}
	if _, _, _, err := Update(nil, ow, nil, nil); err == nil {
		t.Fatal("a new filter without a module")
	}
	raw, _ := json.Marshal(v3)
	back, ok, err := ParseSpec(raw)
	if err != nil || !ok || back.Version != 3 || len(back.Blobs()) != 3 {
		t.Fatalf("spec round trip: %+v %v %v", back, ok, err)
	}
	if _, ok, _ := ParseSpec([]byte(`{"kind":"native"}`)); ok {
		t.Fatal("a spec of another kind parsed as wasm")
	}
}
