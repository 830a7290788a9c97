package ui

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// Roles of a session.
const (
	roleAdmin  = "admin"
	roleTenant = "tenant"
)

// cookieName is the session cookie. It holds a random session id, never
// the admin token nor a tenant's secret.
const cookieName = "facet_session"

// csrfHeader carries the session's CSRF token on every change.
const csrfHeader = "X-CSRF-Token"

// maxSessions bounds the session table; when it is full the oldest session
// gives way.
const maxSessions = 4096

// session is a signed-in browser.
type session struct {
	role string
	// tenant and accessKey are a tenant session's; the key is checked
	// again on each request, so that revoking it ends the session.
	tenant, accessKey string
	csrf              string
	created, seen     time.Time
}

// sessions is the server-side session table, keyed by the SHA-256 of the
// cookie's id so that the table itself holds nothing a browser could
// present.
type sessions struct {
	idle, max time.Duration
	now       func() time.Time
	mu        sync.Mutex
	m         map[[sha256.Size]byte]*session
}

func newSessions(idle, max time.Duration, now func() time.Time) *sessions {
	return &sessions{idle: idle, max: max, now: now, m: map[[sha256.Size]byte]*session{}}
}

func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on Linux (Go 1.24+ panics instead)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// create opens a session and returns its cookie id.
func (s *sessions) create(sess session) (string, *session) {
	id := randomToken()
	now := s.now()
	sess.csrf, sess.created, sess.seen = randomToken(), now, now
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked(now)
	if len(s.m) >= maxSessions {
		var oldestK [sha256.Size]byte
		var oldest *session
		for k, v := range s.m {
			if oldest == nil || v.seen.Before(oldest.seen) {
				oldestK, oldest = k, v
			}
		}
		delete(s.m, oldestK)
	}
	p := &sess
	s.m[sha256.Sum256([]byte(id))] = p
	return id, p
}

func (s *sessions) sweepLocked(now time.Time) {
	for k, v := range s.m {
		if s.expired(v, now) {
			delete(s.m, k)
		}
	}
}

func (s *sessions) expired(v *session, now time.Time) bool {
	return now.Sub(v.seen) > s.idle || now.Sub(v.created) > s.max
}

// get returns the live session of id and marks it seen; a copy, so that
// callers read it without the lock.
func (s *sessions) get(id string) (session, bool) {
	if id == "" {
		return session{}, false
	}
	k := sha256.Sum256([]byte(id))
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[k]
	if !ok {
		return session{}, false
	}
	if s.expired(v, now) {
		delete(s.m, k)
		return session{}, false
	}
	v.seen = now
	return *v, true
}

func (s *sessions) delete(id string) {
	k := sha256.Sum256([]byte(id))
	s.mu.Lock()
	delete(s.m, k)
	s.mu.Unlock()
}

func (s *sessions) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// setCookie sends the session cookie: HttpOnly (scripts cannot read it),
// SameSite=Strict (no other site's page can send it), Secure when the
// connection is TLS, scoped to the dashboard's paths.
func setCookie(w http.ResponseWriter, r *http.Request, id string, maxAge time.Duration) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: id, Path: "/ui/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil, MaxAge: int(maxAge.Seconds()),
	})
}

func clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: "", Path: "/ui/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil, MaxAge: -1,
	})
}

func sessionID(r *http.Request) string {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return ""
	}
	return c.Value
}

// csrfOK reports whether r carries the session's CSRF token.
func csrfOK(r *http.Request, sess session) bool {
	got := r.Header.Get(csrfHeader)
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(sess.csrf)) == 1
}
