package policy

import (
	"reflect"
	"testing"
)

func warningStrings(c *Compiled) []string {
	var out []string
	for _, w := range c.Warnings {
		out = append(out, w.String())
	}
	return out
}

func TestWarnings(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"compress after encrypt, same stage",
			"p1: FOR TENANT t1 DO SET encryption ON gateway\np2: FOR TENANT t1 DO SET compression ON gateway",
			[]string{"line 2: compression from policy p2 (line 2) at the gateway stage would run after encryption from policy p1 (line 1) at the gateway stage on PUT for tenant t1: encrypted data does not compress; declare compression first or run it at an earlier stage"}},
		{"compress after encrypt, later stage, only for one bucket",
			"p1: FOR TENANT t1 DO SET encryption ON gateway\np2: FOR BUCKET t1/b1 DO SET compression ON storage",
			[]string{"line 2: compression from policy p2 (line 2) at the storage stage would run after encryption from policy p1 (line 1) at the gateway stage on PUT for bucket t1/b1: encrypted data does not compress; declare compression first or run it at an earlier stage"}},
		{"a dynamic policy counts as if active",
			"p1: FOR TENANT t1 WHEN get_ops > 5 DO SET encryption ON gateway\np2: FOR TENANT t1 DO SET compression ON gateway",
			[]string{"line 2: compression from policy p2 (line 2) at the gateway stage would run after encryption from policy p1 (line 1) at the gateway stage on PUT for tenant t1: encrypted data does not compress; declare compression first or run it at an earlier stage"}},
		{"Crystal's pipelining is fine: compression at the proxy, encryption at storage",
			"p1: FOR ALL DO SET encryption ON storage\np2: FOR TENANT t1 DO SET compression ON gateway", nil},
		{"declared in the right order",
			"p1: FOR TENANT t1 DO SET compression, SET encryption ON gateway", nil},
		{"same filter, same target, same level",
			"p1: FOR TENANT t1 DO SET compression WITH level=3\np2: FOR TENANT t1 DO SET compression WITH level=5\np3: FOR TENANT t1 DO DELETE compression",
			[]string{
				"line 2: policy p1 (line 1) sets compression for TENANT t1 and policy p2 (line 2) later sets it again at the same level; the later one wins",
				"line 3: policy p2 (line 2) sets compression for TENANT t1 and policy p3 (line 3) later deletes it at the same level; the later one wins",
			}},
		{"conditional and dynamic entries may override on purpose",
			"p1: FOR TENANT t1 DO SET compression WITH level=3\np2: FOR TENANT t1 DO SET compression WITH level=9 TO OBJECT_TYPE=LOGS\np3: FOR TENANT t1 WHEN put_ops > 100 DO SET compression WITH level=1", nil},
		{"DELETE with nothing to delete, empty group",
			"p1: FOR BUCKET t1/b1 DO DELETE compression\np2: FOR ALL DO DELETE noop\np3: FOR G:gold DO SET noop",
			[]string{
				"line 3: policy p3 (line 3): group gold has no members, so the policy applies to nothing",
				"line 1: policy p1 (line 1): DELETE compression for BUCKET t1/b1 removes nothing: no broader policy sets compression",
				"line 2: policy p2 (line 2): DELETE noop for ALL removes nothing: no broader policy sets noop",
			}},
		{"DELETE under a group member or a bare bucket is fine",
			"p1: FOR G:web DO SET noop\np2: FOR BUCKET t1/b1 DO DELETE noop\np3: FOR TENANT t2 DO SET caching\np4: FOR BUCKET b1 DO DELETE caching", nil},
		{"a filter after a reversible one sees its output",
			"p1: FOR TENANT t1 DO SET compression ON storage, SET scanner ON storage",
			[]string{"line 1: scanner from policy p1 (line 1) runs after compression from policy p1 (line 1) on PUT for tenant t1, so it sees compression's output instead of the client's data"}},
	}
	groups := map[string][]string{"gold": nil, "web": {"t1"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compile(t, tt.src, groups)
			if got := warningStrings(c); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("warnings:\n%q\nwant:\n%q", got, tt.want)
			}
		})
	}
}

func TestWarningRefs(t *testing.T) {
	c := compile(t, "enc: FOR TENANT t1 DO SET encryption ON gateway\n\n  # later\nzip: FOR TENANT t1 DO SET compression ON gateway", nil)
	if len(c.Warnings) != 1 {
		t.Fatalf("warnings = %v", c.Warnings)
	}
	w := c.Warnings[0]
	want := []PolicyRef{{ID: "enc", Name: "enc", Line: 1}, {ID: "zip", Name: "zip", Line: 4}}
	if w.PolicyID != "zip" || w.Line != 4 || !reflect.DeepEqual(w.Policies, want) {
		t.Errorf("warning = %+v", w)
	}
}

func TestCustomOrderRules(t *testing.T) {
	ps, err := ParseAndCheck("", "FOR TENANT t1 DO SET scanner, SET noop", testVocab())
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(ps, nil, WithOrderRules(OrderRule{First: "noop", Then: "scanner", Why: "noop measures the raw stream"}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"line 1: noop from policy #1 (line 1) at the gateway stage would run after scanner from policy #1 (line 1) at the gateway stage on PUT for tenant t1: noop measures the raw stream; declare noop first or run it at an earlier stage"}
	if got := warningStrings(c); !reflect.DeepEqual(got, want) {
		t.Errorf("warnings = %q", got)
	}
}
