package server

import (
	"strings"
	"testing"
)

// The gateway role refuses every store that is local to one machine, and
// says which flag is wrong, without echoing URLs (they carry passwords).
func TestCheckGateway(t *testing.T) {
	good := Options{MetaURL: "redis://:pw@127.0.0.1:6379/0", BackendURL: "s3://AK:SECRETVALUE@127.0.0.1:7070/facet?tls=false",
		BusURL: "nats://127.0.0.1:4222", AdminToken: "t"}
	env := func(k string) string {
		if k == "FACET_MASTER_KEY" {
			return "x"
		}
		return ""
	}
	if err := CheckGateway(good, env); err != nil {
		t.Fatalf("a fleet's stores refused: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Options)
		env  func(string) string
		want []string
	}{
		{"nothing", func(o *Options) { *o = Options{} }, func(string) string { return "" },
			[]string{"--meta is required", "--backend is required", "--bus is required", "--admin-token", "master key"}},
		{"bolt meta", func(o *Options) { o.MetaURL = "bolt:///var/lib/facet/meta.db" }, env, []string{`--meta: a "bolt" store is local`}},
		{"fs backend", func(o *Options) { o.BackendURL = "/var/lib/facet" }, env, []string{"--backend: scheme"}},
		{"embedded bus", func(o *Options) { o.BusListen = "127.0.0.1:4222" }, env, []string{"--bus-listen"}},
		{"http bus", func(o *Options) { o.BusURL = "http://h:1" }, env, []string{`--bus: scheme "http"`}},
		{"no token", func(o *Options) { o.AdminToken = "" }, env, []string{"--admin-token"}},
		{"no master key", func(*Options) {}, func(string) string { return "" }, []string{"FACET_MASTER_KEY"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := good
			tc.mod(&o)
			err := CheckGateway(o, tc.env)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			for _, secret := range []string{"SECRETVALUE", ":pw@"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q shows a secret", err)
				}
			}
		})
	}
}
