package bus

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCheckSubject(t *testing.T) {
	for _, s := range []string{"a", "facet.metrics.node.put_ops", "facet.metric.put_ops.bucket.t1/b1"} {
		if err := CheckSubject(s); err != nil {
			t.Errorf("CheckSubject(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "a..b", ".a", "a.", "a.*", "a.>", "a b", "a.b*"} {
		if err := CheckSubject(s); !errors.Is(err, ErrBadSubject) {
			t.Errorf("CheckSubject(%q) = %v, want ErrBadSubject", s, err)
		}
	}
	for _, s := range []string{"a.*", "a.>", ">", "*.b.*", "facet.metric.*.tenant.t1"} {
		if err := CheckPattern(s); err != nil {
			t.Errorf("CheckPattern(%q): %v", s, err)
		}
	}
	for _, s := range []string{"a.>.b", "a.b>", "a..b", ""} {
		if err := CheckPattern(s); !errors.Is(err, ErrBadSubject) {
			t.Errorf("CheckPattern(%q) = %v, want ErrBadSubject", s, err)
		}
	}
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{
		{"a", "a", true},
		{"a", "b", false},
		{"a.b", "a", false},
		{"a", "a.b", false},
		{"a.*", "a.b", true},
		{"a.*", "a.b.c", false},
		{"a.>", "a.b.c", true},
		{"a.>", "a", false},
		{">", "a", true},
		{"*.b.*", "x.b.y", true},
		{"*.b.*", "x.c.y", false},
		{"facet.metric.*.tenant.t1", "facet.metric.put_ops.tenant.t1", true},
		{"facet.metric.*.tenant.t1", "facet.metric.put_ops.tenant.t2", false},
	} {
		if got := Match(c.p, c.s); got != c.want {
			t.Errorf("Match(%q, %q) = %v", c.p, c.s, got)
		}
	}
}

func TestEscapeToken(t *testing.T) {
	for in, want := range map[string]string{
		"t1":              "t1",
		"t1/b1":           "t1/b1",
		"t1/my.bucket":    "t1/my%2Ebucket",
		"":                "%",
		"a b*c>d%e":       "a%20b%2Ac%3Ed%25e",
		"logs/2024/é.txt": "logs/2024/%C3%A9%2Etxt",
		"%":               "%25",
	} {
		got := EscapeToken(in)
		if got != want {
			t.Errorf("EscapeToken(%q) = %q, want %q", in, got, want)
		}
		if err := CheckSubject("x." + got); err != nil {
			t.Errorf("escaped %q is not a token: %v", in, err)
		}
		back, err := UnescapeToken(got)
		if err != nil || back != in {
			t.Errorf("UnescapeToken(%q) = %q, %v", got, back, err)
		}
	}
	for _, bad := range []string{"a%2", "a%zz", "%4"} {
		if _, err := UnescapeToken(bad); err == nil {
			t.Errorf("UnescapeToken(%q) accepted", bad)
		}
	}
}

// wait receives from c, failing the test if nothing comes for a long time
// (a bound against hangs, not a timing assertion).
func wait[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s", what)
		panic("unreachable")
	}
}

type msg struct{ subject, data string }

func collect(t *testing.T, b Bus, pattern string) <-chan msg {
	t.Helper()
	c := make(chan msg, 100)
	sub, err := b.Subscribe(pattern, func(s string, d []byte) { c <- msg{s, string(d)} })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return c
}

func TestEmbeddedInProcess(t *testing.T) {
	srv, err := StartServer(ServerOptions{Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if srv.URL() != "" {
		t.Fatalf("an embedded server without Addr listens on %s", srv.URL())
	}
	pub, err := srv.Connect("pub")
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	sub, err := srv.Connect("sub")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	all := collect(t, sub, "facet.metric.>")
	t1 := collect(t, sub, "facet.metric.*.tenant.t1")
	if err := sub.Flush(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, tn := range []string{"t2", "t1"} {
		if err := pub.Publish("facet.metric.put_ops.tenant."+tn, []byte(tn)); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if m := wait(t, t1, "message for t1"); m.data != "t1" {
		t.Fatalf("t1 subscriber got %+v", m)
	}
	got := []string{wait(t, all, "message").data, wait(t, all, "message").data}
	if got[0] != "t2" || got[1] != "t1" {
		t.Fatalf("wildcard subscriber got %v (order of one publisher must hold)", got)
	}
	select {
	case m := <-t1:
		t.Fatalf("t1 subscriber also got %+v", m)
	default:
	}
	if err := pub.Publish("facet.metric.*", nil); !errors.Is(err, ErrBadSubject) {
		t.Fatalf("publish on a pattern: %v", err)
	}
	if s := pub.Stats(); s.OutMsgs != 2 || s.PublishErrors != 1 || !s.Connected {
		t.Fatalf("publisher stats %+v", s)
	}
	st, err := srv.Stats()
	if err != nil || st.InMsgs != 2 || st.OutMsgs != 3 || st.InBytes != 4 {
		t.Fatalf("server stats %+v, %v", st, err)
	}
}

// A NATS server restarted on the same port: connections reconnect by
// themselves, subscriptions resume, and publishing never fails the caller
// while the server is away.
func TestRestartResumesSubscriptions(t *testing.T) {
	srv, err := StartServer(ServerOptions{Name: "a", Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	url := srv.URL()
	_, port, _ := net.SplitHostPort(url[len("nats://"):])

	pub, err := Dial(url, "pub", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	sub, err := Dial(url, "sub", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	got := collect(t, sub, "facet.metrics.node.*")
	if err := sub.Flush(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish("facet.metrics.node.put_ops", []byte("before")); err != nil {
		t.Fatal(err)
	}
	if m := wait(t, got, "message before restart"); m.data != "before" {
		t.Fatalf("got %+v", m)
	}

	srv.Close()
	for pub.Connected() || sub.Connected() {
		time.Sleep(10 * time.Millisecond)
	}
	// While the bus is down, publishes are buffered, not refused.
	if err := pub.Publish("facet.metrics.node.put_ops", []byte("while down")); err != nil {
		t.Fatalf("publish while the bus is down: %v", err)
	}

	srv2, err := StartServer(ServerOptions{Name: "b", Addr: "127.0.0.1:" + port})
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	for !pub.Connected() || !sub.Connected() {
		time.Sleep(10 * time.Millisecond)
	}
	// The buffered message may arrive before the subscriber's SUB is
	// replayed; keep publishing until the subscription delivers.
	seen := map[string]bool{}
	for i := 0; !seen["after"]; i++ {
		if i > 3000 {
			t.Fatal("subscription did not resume after the restart")
		}
		if err := pub.Publish("facet.metrics.node.put_ops", []byte("after")); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-got:
			seen[m.data] = true
		case <-time.After(10 * time.Millisecond):
		}
	}
	if s := pub.Stats(); s.Reconnects == 0 || s.PublishErrors != 0 {
		t.Fatalf("publisher stats after restart: %+v", s)
	}
}

// Dial succeeds while nothing listens yet, and connects once a server
// appears.
func TestDialBeforeServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	b, err := Dial("nats://"+addr, "early", "", nil)
	if err != nil {
		t.Fatalf("dial with the bus down: %v", err)
	}
	defer b.Close()
	if err := b.Publish("x.y", []byte("buffered")); err != nil {
		t.Fatalf("publish before connecting: %v", err)
	}
	srv, err := StartServer(ServerOptions{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for !b.Connected() {
		time.Sleep(10 * time.Millisecond)
	}
	got := collect(t, b, "x.>")
	for i := 0; ; i++ {
		if err := b.Publish("x.y", fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-got:
			return
		case <-time.After(10 * time.Millisecond):
		}
		if i > 3000 {
			t.Fatal("no delivery after connecting")
		}
	}
}

// syncBuffer is a log destination written by the client library's
// callback goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// An in-process connection is logged as such, not as the client library's
// default URL, where no port is open.
func TestInProcessConnectionLog(t *testing.T) {
	var logs syncBuffer
	srv, err := StartServer(ServerOptions{Name: "test", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, err := srv.Connect("gw")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "bus in-process"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no in-process line: %s", logs.String())
		}
	}
	if strings.Contains(logs.String(), "4222") || strings.Contains(logs.String(), "bus connected") {
		t.Fatalf("%s", logs.String())
	}
}
