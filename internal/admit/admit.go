// Package admit owns the contract between the S3 front end and the stages
// that admit its requests and pace their bytes: QoS (admission, once a
// request is authenticated and routed) and Shaper (pacing one admitted
// request). The front end calls it; the QoS stages (internal/qos's Limiter
// behind internal/flowctx's Enforcer) implement it; Retrying is how
// background work waits for its class. It is a leaf (standard
// library only) so those stages need not import the front end.
package admit

import (
	"context"
	"errors"
	"io"
	"time"
)

// QoS admits requests and shapes their bytes (internal/qos's Limiter,
// adapted by the server). Admit is called once a request is authenticated
// and routed; an error with a RetryAfter() time.Duration method refuses it
// with 503 SlowDown and that Retry-After.
type QoS interface {
	Admit(ctx context.Context, tenant, method string) (Shaper, error)
}

// Shaper paces one admitted request's bytes: the client's payload as it is
// read and the response as it is written. Done is called when the request
// ends.
type Shaper interface {
	Reader(r io.Reader) io.Reader
	Writer(w io.Writer) io.Writer
	Done()
}

type retryKey struct{}

// WithRetryKey returns ctx carrying key, which names one client operation
// across its retries (an AWS SDK's amz-sdk-invocation-id): an operation
// refused with SlowDown may keep its place in line, and its retry under
// the same key takes that place.
func WithRetryKey(ctx context.Context, key string) context.Context {
	if key == "" {
		return ctx
	}
	return context.WithValue(ctx, retryKey{}, key)
}

// RetryKey is the key WithRetryKey put in ctx, or "".
func RetryKey(ctx context.Context) string {
	k, _ := ctx.Value(retryKey{}).(string)
	return k
}

// Retrying calls admit until it admits, waiting after each refusal the
// Retry-After it names (an error with a RetryAfter() time.Duration
// method), until ctx ends; any other error ends it. Background work (the
// recycle bin's copies, the scrubber's reads) waits for its class so.
func Retrying[W any](ctx context.Context, admit func(context.Context) (W, error)) (W, error) {
	for {
		w, err := admit(ctx)
		if err == nil {
			return w, nil
		}
		var ra interface{ RetryAfter() time.Duration }
		if !errors.As(err, &ra) {
			return w, err
		}
		t := time.NewTimer(max(ra.RetryAfter(), time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			var zero W
			return zero, ctx.Err()
		case <-t.C:
		}
	}
}
