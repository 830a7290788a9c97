package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

type lines []string

func (l *lines) Printf(_ context.Context, format string, v ...any) {
	*l = append(*l, fmt.Sprintf(format, v...))
}

func TestThrottledLog(t *testing.T) {
	var got lines
	tl := &throttledLog{next: &got, period: 50 * time.Millisecond}
	for range 100 {
		tl.Printf(t.Context(), "dial %s failed", "127.0.0.1:1")
	}
	if len(got) != 1 {
		t.Fatalf("%d messages passed in a burst; want 1: %q", len(got), got)
	}
	time.Sleep(60 * time.Millisecond)
	tl.Printf(t.Context(), "dial %s failed", "127.0.0.1:1")
	if len(got) != 2 || !strings.Contains(got[1], "and 99 similar messages") {
		t.Fatalf("after the period: %q", got)
	}
}
