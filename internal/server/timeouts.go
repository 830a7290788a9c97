package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/facet-sds/facet/internal/s3err"
)

// Listener timeouts: defaults of Options.IdleTimeout, BodyReadTimeout and
// BodyMinRate.
const (
	defaultIdleTimeout     = 2 * time.Minute
	defaultBodyReadTimeout = 30 * time.Second
	defaultBodyMinRate     = 1024 // bytes per second
	headerTimeout          = 10 * time.Second
)

// listenerTimeouts are the limits every HTTP listener puts on a client:
// how long a keep-alive connection may sit idle, and how fast a request
// body must arrive.
type listenerTimeouts struct {
	idle time.Duration
	// body is the longest a read of a request body may wait for bytes,
	// and the grace before minRate applies; 0 sets no deadline.
	body time.Duration
	// minRate is the slowest average a body may arrive at, counted over
	// the time the handler spent waiting for it (bytes per second; 0:
	// only the per-read wait is bounded).
	minRate int64
}

func (o Options) timeouts() listenerTimeouts {
	t := listenerTimeouts{idle: o.IdleTimeout, body: o.BodyReadTimeout, minRate: o.BodyMinRate}
	if t.idle == 0 {
		t.idle = defaultIdleTimeout
	}
	if t.body == 0 {
		t.body = defaultBodyReadTimeout
	}
	if t.minRate == 0 {
		t.minRate = defaultBodyMinRate
	}
	// Negative values switch a limit off.
	t.idle, t.body, t.minRate = max(t.idle, 0), max(t.body, 0), max(t.minRate, 0)
	return t
}

// apply sets the connection timeouts of srv and wraps its handler with the
// body deadline.
func (t listenerTimeouts) apply(srv *http.Server) {
	if t.idle > 0 {
		srv.IdleTimeout = t.idle
	}
	if srv.ReadHeaderTimeout == 0 {
		srv.ReadHeaderTimeout = headerTimeout
	}
	if t.body > 0 {
		srv.Handler = t.bodyDeadline(srv.Handler)
	}
}

// bodyDeadline makes a request body keep moving: each read of it must
// return within t.body, and after that grace the body must have arrived
// at t.minRate on average over the time spent waiting for it (time the
// handler spends elsewhere, e.g. queued by QoS, is not the client's). A
// body that falls behind ends in S3's RequestTimeout and its connection
// is closed. The deadline is the connection's read deadline, so a slow
// client holds no goroutine past it.
func (t listenerTimeouts) bodyDeadline(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			r.Body = &deadlineBody{rc: r.Body, ctl: http.NewResponseController(w), t: t, now: time.Now}
		}
		h.ServeHTTP(w, r)
	})
}

// deadlineBody is a request body under listenerTimeouts.
type deadlineBody struct {
	rc     io.ReadCloser
	ctl    *http.ResponseController
	t      listenerTimeouts
	now    func() time.Time
	n      int64         // bytes read
	waited time.Duration // time spent inside reads
	done   bool          // EOF or an error: the deadline is no longer ours
	err    error
}

// budget is how long the next read may wait: t.body, or less when the
// body is behind its minimum rate.
func (b *deadlineBody) budget() time.Duration {
	d := b.t.body
	if b.t.minRate > 0 {
		allowed := b.t.body + time.Duration(float64(b.n)/float64(b.t.minRate)*float64(time.Second))
		d = min(d, allowed-b.waited)
	}
	return d
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.done {
		return b.rc.Read(p)
	}
	d := b.budget()
	if d <= 0 {
		return 0, b.timeout(fmt.Errorf("body below %d bytes/s after %d bytes", b.t.minRate, b.n))
	}
	start := b.now()
	// Set before each read, never after: the read that reaches EOF lets
	// net/http clear the deadline for its background read, which a later
	// deadline would cut (cancelling the request's context).
	if err := b.ctl.SetReadDeadline(start.Add(d)); err != nil {
		// The writer cannot set deadlines (a test recorder): no limit.
		b.done = true
		return b.rc.Read(p)
	}
	n, err := b.rc.Read(p)
	b.waited += b.now().Sub(start)
	b.n += int64(n)
	switch {
	case err == nil:
	case errors.Is(err, os.ErrDeadlineExceeded):
		return n, b.timeout(err)
	default:
		b.done = true
	}
	return n, err
}

func (b *deadlineBody) timeout(cause error) error {
	b.err = &s3err.Error{Code: s3err.RequestTimeout, Err: fmt.Errorf("request body: %w", cause)}
	return b.err
}

func (b *deadlineBody) Close() error { return b.rc.Close() }
