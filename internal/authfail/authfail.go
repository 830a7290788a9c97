// Package authfail owns the failed-authentication limiter every credential
// check of Facet shares (dashboard sign-in, the admin and metrics bearer
// tokens, SigV4 on the S3 listener and on the admin API): each source gets
// a few failures per window, then is refused, before its credentials are
// checked, until the window ends. Refusing before the check matters: a
// source that could still learn which guess was right would keep guessing.
// Successful requests count nothing, and one source's failures never touch
// another's. It is a leaf: it imports only the standard library.
package authfail

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Defaults of Config.
const (
	DefaultWindow   = time.Minute
	DefaultFailures = 10
	// maxSources bounds the memory a flood of distinct sources can take:
	// past it, new sources are not counted until the window ends.
	maxSources = 10000
)

// Config configures a Limiter.
type Config struct {
	// Window is how long failures are remembered (a fixed window: all
	// counts reset together); 0 means DefaultWindow.
	Window time.Duration
	// Failures is how many failures a source may have per window; 0 means
	// DefaultFailures.
	Failures int
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// Limiter counts failed authentications per source.
type Limiter struct {
	window   time.Duration
	failures int
	now      func() time.Time

	mu    sync.Mutex
	start time.Time
	fails map[string]int
}

// New returns a Limiter.
func New(cfg Config) *Limiter {
	l := &Limiter{window: cfg.Window, failures: cfg.Failures, now: cfg.Now, fails: map[string]int{}}
	if l.window <= 0 {
		l.window = DefaultWindow
	}
	if l.failures <= 0 {
		l.failures = DefaultFailures
	}
	if l.now == nil {
		l.now = time.Now
	}
	return l
}

// Allowed reports whether source may try to authenticate now, and if not,
// how long until it may again.
func (l *Limiter) Allowed(source string) (bool, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roll(now)
	if l.fails[source] >= l.failures {
		return false, l.start.Add(l.window).Sub(now)
	}
	return true, 0
}

// Failed counts a failed authentication of source.
func (l *Limiter) Failed(source string) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roll(now)
	if _, ok := l.fails[source]; ok || len(l.fails) < maxSources {
		l.fails[source]++
	}
}

func (l *Limiter) roll(now time.Time) {
	if now.Sub(l.start) >= l.window {
		l.start, l.fails = now, map[string]int{}
	}
}

// ClientAddr is the source address of r (its IP, without the port): the
// source a listener's limiter counts. Forwarding headers are not trusted.
func ClientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// Counts reports whether an authentication refused with the S3 error code
// code is a failed credential (a wrong signature, secret or key) rather
// than a malformed or unsigned request, which guesses nothing.
func Counts(code string) bool {
	switch code {
	case "SignatureDoesNotMatch", "InvalidAccessKeyId":
		return true
	}
	return false
}
