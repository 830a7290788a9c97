package meta

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestContextRules(t *testing.T) {
	s := newBoltStore(t)
	ctx := t.Context()
	if _, _, err := s.CreateTenantWithKey(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	rules := json.RawMessage(`{"default":"fg","rules":[{"prefix":"tmp/","class":"scratch"}]}`)
	if err := s.SetContextRules(ctx, "nobody", rules); !errors.Is(err, ErrTenantNotFound) {
		t.Fatalf("unknown tenant: %v", err)
	}
	if err := s.SetContextRules(ctx, "t1", json.RawMessage(`{`)); !errors.Is(err, ErrInvalidBlob) {
		t.Fatalf("bad JSON: %v", err)
	}
	if _, err := s.ContextRules(ctx, "t1"); !errors.Is(err, ErrContextRulesNotFound) {
		t.Fatalf("none yet: %v", err)
	}
	if err := s.SetContextRules(ctx, "t1", rules); err != nil {
		t.Fatal(err)
	}
	got, err := s.ContextRules(ctx, "t1")
	if err != nil || string(got) != string(rules) {
		t.Fatalf("%s %v", got, err)
	}
	all, err := s.AllContextRules(ctx)
	if err != nil || len(all) != 1 || string(all["t1"]) != string(rules) {
		t.Fatalf("%v %v", all, err)
	}
	if err := s.DeleteContextRules(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteContextRules(ctx, "t1"); !errors.Is(err, ErrContextRulesNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}
