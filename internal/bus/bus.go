// Package bus owns Facet's message bus: publish/subscribe on NATS-style
// subjects ("facet.metrics.node.put_ops", patterns with "*" for one token
// and ">" for the rest). It runs on NATS: a server embedded in the process
// (no port opened unless asked), a standalone one (`facet bus`), or an
// external cluster reached by URL. Connections reconnect forever, and a
// bus that is down never fails the caller's data path: publishes are
// buffered while reconnecting, and those that cannot be are counted.
//
// The subjects Facet uses and their JSON messages are documented in
// docs/bus.md.
package bus

import (
	"errors"
	"fmt"
	"strings"
)

// Bus publishes messages and delivers them to subscribers whose pattern
// matches the subject.
type Bus interface {
	// Publish sends data on subject (no wildcards). It does not wait for
	// delivery; while the bus is unreachable it buffers a bounded amount
	// and then fails. data may be reused once it returns.
	Publish(subject string, data []byte) error
	// Subscribe calls fn for every message whose subject matches pattern.
	// Calls for one subscription are sequential, on a goroutine of the
	// bus; fn must not hold on to data after it returns. Subscriptions
	// survive reconnections.
	Subscribe(pattern string, fn func(subject string, data []byte)) (Subscription, error)
	// Close flushes what is buffered and closes the connection.
	Close() error
}

// Subscription is a live subscription.
type Subscription interface {
	Unsubscribe() error
}

// Stats counts one connection's traffic. Bytes are payload bytes, as
// NATS counts them.
type Stats struct {
	OutMsgs, OutBytes uint64 // published
	InMsgs, InBytes   uint64 // delivered to this connection's subscriptions
	// PublishErrors counts publishes refused (closed connection, full
	// reconnect buffer, invalid subject).
	PublishErrors uint64
	// SlowConsumer counts episodes of a subscriber falling so far behind
	// that messages were dropped.
	SlowConsumer uint64
	Reconnects   uint64
	Connected    bool
}

// ErrBadSubject is returned for an invalid subject or pattern.
var ErrBadSubject = errors.New("bus: invalid subject")

// CheckSubject reports whether s is a valid subject to publish on: dot
// separated non-empty tokens without wildcards or white space.
func CheckSubject(s string) error { return checkSubject(s, false) }

// CheckPattern reports whether p is a valid subscription pattern: a
// subject whose tokens may be "*", and whose last token may be ">".
func CheckPattern(p string) error { return checkSubject(p, true) }

func checkSubject(s string, wildcards bool) error {
	if s == "" {
		return fmt.Errorf("%w: empty", ErrBadSubject)
	}
	toks := strings.Split(s, ".")
	for i, t := range toks {
		switch {
		case t == "":
			return fmt.Errorf("%w: %q has an empty token", ErrBadSubject, s)
		case t == "*" || t == ">":
			if !wildcards {
				return fmt.Errorf("%w: %q: wildcards are for subscriptions", ErrBadSubject, s)
			}
			if t == ">" && i != len(toks)-1 {
				return fmt.Errorf("%w: %q: \">\" must be the last token", ErrBadSubject, s)
			}
		case strings.ContainsAny(t, "*> \t\r\n\f\v"):
			return fmt.Errorf("%w: %q: token %q holds a wildcard or white space", ErrBadSubject, s, t)
		}
	}
	return nil
}

// Match reports whether subject matches pattern.
func Match(pattern, subject string) bool {
	for {
		p, prest, pmore := strings.Cut(pattern, ".")
		s, srest, smore := strings.Cut(subject, ".")
		switch {
		case p == ">":
			return s != ""
		case p != "*" && p != s:
			return false
		case !pmore || !smore:
			return pmore == smore
		}
		pattern, subject = prest, srest
	}
}

// EscapeToken makes s usable as one subject token: it percent-encodes
// '.', '*', '>', '%', white space, control bytes and bytes >= 0x7f. An
// empty s becomes "%". Tenant, bucket and object names go through it.
func EscapeToken(s string) string {
	if s == "" {
		return "%"
	}
	clean := true
	for i := 0; i < len(s); i++ {
		if needsEscape(s[i]) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if needsEscape(c) {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func needsEscape(c byte) bool {
	return c <= ' ' || c >= 0x7f || c == '.' || c == '*' || c == '>' || c == '%'
}

// UnescapeToken reverses EscapeToken.
func UnescapeToken(t string) (string, error) {
	if t == "%" {
		return "", nil
	}
	if !strings.Contains(t, "%") {
		return t, nil
	}
	b := make([]byte, 0, len(t))
	for i := 0; i < len(t); i++ {
		if t[i] != '%' {
			b = append(b, t[i])
			continue
		}
		if i+2 >= len(t) {
			return "", fmt.Errorf("%w: bad escape in %q", ErrBadSubject, t)
		}
		hi, ok1 := unhex(t[i+1])
		lo, ok2 := unhex(t[i+2])
		if !ok1 || !ok2 {
			return "", fmt.Errorf("%w: bad escape in %q", ErrBadSubject, t)
		}
		b = append(b, hi<<4|lo)
		i += 2
	}
	return string(b), nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
