package ctl

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/audit"
	"github.com/facet-sds/facet/internal/meta"
)

// lockedBuffer is a bytes.Buffer written by the command and read by the
// test while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestAuditTail: `audit tail -n N` prints the last N lines, one JSON
// object each; --follow prints the lines written after it started; a
// server without an audit log answers 501.
func TestAuditTail(t *testing.T) {
	l, err := audit.Open(audit.Config{Path: filepath.Join(t.TempDir(), "audit.log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	e := newEnvWith(t, func(_ *meta.Store, c *admin.Config) { c.Audit = l })
	for _, n := range []string{"t1", "t2", "t3"} {
		mustOK(t, e.ctl(t, "tenant", "create", n))
	}
	out := mustOK(t, e.ctl(t, "audit", "tail", "-n", "2"))
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"tenant":"t2"`) || !strings.Contains(lines[1], `"tenant":"t3"`) {
		t.Fatalf("tail -n 2:\n%s", out)
	}
	oneJSONObject(t, lines[1]+"\n")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cmd := NewCommand()
	var buf lockedBuffer
	cmd.SetOut(&buf)
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"--admin", e.url, "--token", token, "audit", "tail", "-n", "0", "--follow", "--every", "10ms"})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	// --follow starts at the end of the log as it finds it, which may
	// already hold the first tenant made after the command started (a
	// loaded machine): tenants are made until one of them is printed.
	printed := func() bool {
		return strings.Contains(buf.String(), `"tenant":"f`)
	}
	for i := 0; !printed(); i++ {
		if i == 60 {
			t.Fatalf("--follow printed none of 60 new tenants' lines: %q", buf.String())
		}
		mustOK(t, e.ctl(t, "tenant", "create", fmt.Sprintf("f%d", i)))
		for wait := time.Now().Add(500 * time.Millisecond); !printed() && time.Now().Before(wait); time.Sleep(10 * time.Millisecond) {
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("--follow ended with %v", err)
	}
	if strings.Contains(buf.String(), `"tenant":"t3"`) {
		t.Fatalf("-n 0 --follow printed an old line: %q", buf.String())
	}

	none := newEnv(t)
	if r := none.ctl(t, "audit", "tail"); r.err == nil || !strings.Contains(r.err.Error(), "--audit-log") {
		t.Fatalf("tail without an audit log: %v", r.err)
	}
}
