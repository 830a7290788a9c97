package e2e

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The admin token: generated and printed once when none is configured, kept
// across restarts; FACET_ADMIN_TOKEN is honoured; never logged.
func TestAdminTokenSources(t *testing.T) {
	dataDir := t.TempDir()
	srv := startServerEnv(t, dataDir, "", []string{"FACET_ADMIN_TOKEN="})
	out, err := os.ReadFile(srv.outPath)
	if err != nil {
		t.Fatal(err)
	}
	var token string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(strings.ToLower(line), "token") {
			f := strings.Fields(line)
			token = f[len(f)-1]
		}
	}
	if !regexp.MustCompile(`^[A-Za-z0-9_\-]{16,}$`).MatchString(token) {
		t.Fatalf("serve without a token printed no usable token on stdout:\n%s", out)
	}
	srv.token = token
	srv.createTenant(t, "first")
	if _, err := srv.ctl(t, "tenant", "list"); err != nil {
		t.Fatalf("ctl with the printed token: %v", err)
	}
	code, err := srv.terminate(startupTimeout)
	if err != nil || code != 0 {
		t.Fatalf("SIGTERM: exit %d, %v; want 0", code, err)
	}
	if logb, _ := os.ReadFile(srv.logPath); strings.Contains(string(logb), token) {
		t.Errorf("the generated admin token appears in the JSON log")
	}

	// Restarted without a token: the same one still works and is not printed again.
	srv2 := startServerEnv(t, dataDir, "", []string{"FACET_ADMIN_TOKEN="})
	srv2.token = token
	if _, err := srv2.ctl(t, "tenant", "list"); err != nil {
		t.Errorf("ctl with the first token after a restart: %v", err)
	}
	if out2, _ := os.ReadFile(srv2.outPath); strings.Contains(string(out2), token) {
		t.Errorf("the admin token was printed again on restart; it should be shown once")
	}
	srv2.terminate(startupTimeout)

	// FACET_ADMIN_TOKEN.
	srv3 := startServerEnv(t, t.TempDir(), "", []string{"FACET_ADMIN_TOKEN=env-token-0123456789abcdef0123456789"})
	srv3.token = "env-token-0123456789abcdef0123456789"
	if _, err := srv3.ctl(t, "tenant", "list"); err != nil {
		t.Errorf("ctl with FACET_ADMIN_TOKEN's token: %v", err)
	}
	bad := *srv3
	bad.token = token
	if _, err := bad.ctl(t, "tenant", "list"); err == nil {
		t.Errorf("a server started with FACET_ADMIN_TOKEN accepted another token")
	}
}
