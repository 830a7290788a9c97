package qos

import (
	"context"
	"errors"
	"testing"
)

// A tenant at its cap is refused with a retryable error; others are not;
// a finished request frees its place.
func TestTenantCap(t *testing.T) {
	refused := map[string]int{}
	c := NewTenantCap(nil, 2, func(tenant string) { refused[tenant]++ })
	ctx := context.Background()
	a1, err := c.Admit(ctx, "a", "GET")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admit(ctx, "a", "GET"); err != nil {
		t.Fatal(err)
	}
	_, err = c.Admit(ctx, "a", "PUT")
	var busy ErrTenantBusy
	if !errors.As(err, &busy) || busy.RetryAfter() <= 0 || refused["a"] != 1 {
		t.Fatalf("third request of a: %v, refused %v", err, refused)
	}
	if _, err := c.Admit(ctx, "b", "GET"); err != nil {
		t.Fatalf("another tenant: %v", err)
	}
	a1.Done()
	a1.Done() // twice frees one place only
	if c.InFlight("a") != 1 {
		t.Fatalf("in flight after done: %d", c.InFlight("a"))
	}
	if _, err := c.Admit(ctx, "a", "GET"); err != nil {
		t.Fatalf("after a request ended: %v", err)
	}
}
