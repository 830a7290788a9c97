package authfail

import (
	"fmt"
	"testing"
	"time"
)

// A source is refused after its failures until the window ends; another
// source is not affected; the memory stays bounded.
func TestLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(Config{Window: time.Minute, Failures: 3, Now: func() time.Time { return now }})
	for range 3 {
		if ok, _ := l.Allowed("a"); !ok {
			t.Fatal("refused before its failures")
		}
		l.Failed("a")
	}
	if ok, wait := l.Allowed("a"); ok || wait != time.Minute {
		t.Fatalf("after 3 failures: %v %v; want refused for the window", ok, wait)
	}
	if ok, _ := l.Allowed("b"); !ok {
		t.Fatal("another source refused")
	}
	now = now.Add(time.Minute)
	if ok, _ := l.Allowed("a"); !ok {
		t.Fatal("still refused after the window")
	}
	for i := range maxSources + 10 {
		l.Failed(fmt.Sprint(i))
	}
	if len(l.fails) > maxSources {
		t.Fatalf("%d sources kept, bound %d", len(l.fails), maxSources)
	}
}
