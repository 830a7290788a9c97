package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
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

// Durations are logged as milliseconds, not nanoseconds, under a key that
// says so.
func TestLogDurationsInMS(t *testing.T) {
	var buf strings.Builder
	jsonLogger(&buf, slog.LevelInfo).Info("admin request", slog.Duration("duration", 1500*time.Microsecond), "waited", 2*time.Second)
	var m map[string]any
	if err := json.Unmarshal([]byte(buf.String()), &m); err != nil {
		t.Fatal(err)
	}
	if m["duration_ms"] != 1.5 || m["waited_ms"] != 2000.0 || m["duration"] != nil {
		t.Fatalf("%s", buf.String())
	}
}
