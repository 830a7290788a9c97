package policy

import (
	"testing"

	"github.com/facet-sds/facet/internal/filter"
)

func TestBlockFilterPolicies(t *testing.T) {
	p := checkOne(t, "FOR VOLUME v1 DO SET xor WITH key=0x55, SET bitrev, SET nop")
	if p.Actions[0].Values["key"] != "0x55" || p.Actions[0].Info.Kind != "block" {
		t.Fatalf("xor action = %+v", p.Actions[0])
	}
	c := compile(t, "FOR VOLUME v1 DO SET nop, SET xor WITH key=0x55, SET bitrev\nFOR ALL VOLUMES DO SET encryption", nil)
	if got := pipeline(c.Static().ResolveVolume("v1", filter.MethodPut)); got != "gateway:  | storage: nop xor bitrev encryption" {
		t.Errorf("v1 stack: %s", got)
	}
	wantRefused(t, map[string]string{
		"FOR VOLUME v1 DO SET xor WITH key=0x155":         `xor key "0x155": want one byte`,
		"FOR VOLUME v1 DO SET compression":                `unknown block filter "compression"`,
		"FOR VOLUME v1 DO SET xor ON gateway":             "runs in the block stage: ON is not allowed",
		"FOR VOLUME v1 DO SET xr":                         "did you mean xor?",
		"FOR TENANT t1 DO SET bitrev":                     "bitrev is a block filter: its targets are VOLUME",
		"FOR VOLUME v1 DO SET xor WITH key=1, key=2":      "",
		"FOR VOLUME v1 DO SET encryption WITH engine=gcm": "takes no parameters",
	})
}
