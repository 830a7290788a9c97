package s3api

import "testing"

// A refused SDK call keeps its place in line only when the SDK says it
// will retry: its last attempt would hold a token for nothing.
func TestWillRetry(t *testing.T) {
	for h, want := range map[string]bool{
		"":                   true,
		"attempt=1; max=3":   true,
		"attempt=2;max=3":    true,
		"attempt=3; max=3":   false,
		"attempt=1; max=1":   false,
		"attempt=1":          true,
		"ttl=20260101; x=y":  true,
		"attempt=x; max=one": true,
	} {
		if got := willRetry(h); got != want {
			t.Errorf("willRetry(%q) = %v, want %v", h, got, want)
		}
	}
}
