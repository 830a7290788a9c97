package admit

import (
	"context"
	"errors"
	"testing"
	"time"
)

type refused struct{}

func (refused) Error() string             { return "refused" }
func (refused) RetryAfter() time.Duration { return time.Microsecond }

func TestRetrying(t *testing.T) {
	ctx := context.Background()
	calls := 0
	got, err := Retrying(ctx, func(context.Context) (int, error) {
		if calls++; calls < 3 {
			return 0, refused{}
		}
		return 7, nil
	})
	if err != nil || got != 7 || calls != 3 {
		t.Fatalf("got %d, %v after %d calls", got, err, calls)
	}
	other := errors.New("broken")
	if _, err := Retrying(ctx, func(context.Context) (int, error) { return 0, other }); !errors.Is(err, other) {
		t.Fatalf("another error: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Retrying(cctx, func(context.Context) (int, error) { return 0, refused{} }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}
