package server

import (
	"strings"
	"testing"
)

// TestCheckDisabledControllers: --disable-controller takes the built-in
// controllers' names and refuses others, naming the valid ones.
func TestCheckDisabledControllers(t *testing.T) {
	if err := CheckDisabledControllers([]string{"bandwidth", "automation", "context"}); err != nil {
		t.Fatal(err)
	}
	err := CheckDisabledControllers([]string{"bandwith"})
	if err == nil || !strings.Contains(err.Error(), `--disable-controller "bandwith": no built-in controller of that name (automation, bandwidth, context)`) {
		t.Fatalf("unknown name: %v", err)
	}
	if _, _, err := newControllers(nil, nil, nil, nil, []string{"qos"}, nil); err == nil {
		t.Fatal("newControllers took an unknown name")
	}
}
