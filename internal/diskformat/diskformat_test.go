package diskformat

import (
	"errors"
	"strings"
	"testing"
)

func TestPlan(t *testing.T) {
	steps := []Step[*[]int]{
		{From: 1, What: "second", Apply: func(s *[]int) error { *s = append(*s, 1); return nil }},
		{From: 0, What: "first", Apply: func(s *[]int) error { *s = append(*s, 0); return nil }},
	}
	plan, err := Plan("store", 0, 2, steps)
	if err != nil || len(plan) != 2 || plan[0].From != 0 || plan[1].From != 1 {
		t.Fatalf("plan %+v, %v", plan, err)
	}
	var ran []int
	for _, s := range plan {
		if err := s.Apply(&ran); err != nil {
			t.Fatal(err)
		}
	}
	if len(ran) != 2 || ran[0] != 0 || ran[1] != 1 {
		t.Fatalf("ran %v", ran)
	}
	if got := Describe(plan); got[0] != "format 0 -> 1: first" || got[1] != "format 1 -> 2: second" {
		t.Fatalf("describe %q", got)
	}
	if plan, err := Plan("store", 2, 2, steps); err != nil || len(plan) != 0 {
		t.Fatalf("current: %v, %v", plan, err)
	}
	if _, err := Plan("the index", 3, 2, steps); !errors.Is(err, ErrTooNew) || !strings.Contains(err.Error(), "the index has format 3") {
		t.Fatalf("newer: %v", err)
	}
	if _, err := Plan("store", 0, 3, steps); err == nil || !strings.Contains(err.Error(), "no migration from format 2") {
		t.Fatalf("gap: %v", err)
	}
	if _, err := Plan("store", -1, 2, steps); err == nil {
		t.Fatal("negative format accepted")
	}
}
