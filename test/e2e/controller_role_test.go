package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/meta/redistest"
)

// The controller role as its own process (issue 5): redis-server for the
// shared metadata store, `facet bus`, a gateway that runs no controllers
// and `facet controller` processes, one of them active by a lease.

// controllerProc is one running `facet controller` process.
type controllerProc struct {
	t         *testing.T
	adminAddr string
	token     string
	logPath   string
	cmd       *exec.Cmd
	done      chan struct{}
}

func startController(t *testing.T, id string, env []string) *controllerProc {
	t.Helper()
	logf, err := os.CreateTemp(t.TempDir(), "facet-controller-*.log")
	if err != nil {
		t.Fatal(err)
	}
	c := &controllerProc{t: t, adminAddr: freeAddr(t), token: "ctl-" + randHex(16), logPath: logf.Name(), done: make(chan struct{})}
	c.cmd = exec.Command(facetBin, "controller", "--data", t.TempDir(), "--id", id, "--admin-addr", c.adminAddr, "--admin-token", c.token)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	c.cmd.Env = append(os.Environ(), env...)
	if err := c.cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	go func() {
		_ = c.cmd.Wait()
		logf.Close()
		close(c.done)
	}()
	t.Cleanup(func() {
		c.stop()
		if t.Failed() {
			log, _ := os.ReadFile(c.logPath)
			t.Logf("facet controller %s log:\n%s", id, log)
		}
	})
	deadline := time.Now().Add(startupTimeout)
	for {
		if _, err := c.status(); err == nil {
			return c
		}
		select {
		case <-c.done:
			log, _ := os.ReadFile(c.logPath)
			t.Fatalf("facet controller exited early:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("facet controller %s not healthy after %v", id, startupTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGTERM (the holder then gives its lease up) and waits.
func (c *controllerProc) stop() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(20 * time.Second):
		c.t.Errorf("facet controller did not exit within 20s of SIGTERM")
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
		<-c.done
	}
}

type roleStatus struct {
	ID          string `json:"id"`
	Lease       string `json:"lease"`
	Controllers []struct {
		ID string `json:"id"`
	} `json:"controllers"`
}

// status is GET /v1/controllers of the controller's admin listener.
func (c *controllerProc) status() (roleStatus, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+c.adminAddr+"/v1/controllers", nil)
	if err != nil {
		return roleStatus{}, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return roleStatus{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return roleStatus{}, fmt.Errorf("GET /v1/controllers: %d", resp.StatusCode)
	}
	var st roleStatus
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// waitLease waits until the controller reports the lease as want.
func (c *controllerProc) waitLease(want string) roleStatus {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := c.status()
		if err == nil && st.Lease == want {
			return st
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("controller lease is %+v (%v); want %s", st, err, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *controllerProc) logContains(s string) bool {
	b, _ := os.ReadFile(c.logPath)
	return bytes.Contains(b, []byte(s))
}

func TestControllerRoleSeparateProcess(t *testing.T) {
	rds := redistest.Start(t)
	busAddr := freeAddr(t)
	startBus(t, busAddr)
	mk := make([]byte, 32)
	if _, err := rand.Read(mk); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"FACET_META=" + rds.URL(0, ""), "FACET_BUS=nats://" + busAddr, "FACET_METRICS_PERIOD=1s",
		"FACET_MASTER_KEY=" + base64.StdEncoding.EncodeToString(mk),
	}
	srv := startServerEnv(t, t.TempDir(), "e2e-admin-"+randHex(16), append([]string{"FACET_CONTROLLERS=false"}, env...))
	c1 := startController(t, "c1", env)
	c1.waitLease("held")

	tenant := "role" + randHex(3)
	cr := srv.createTenant(t, tenant)
	cl := srv.sdk(cr)
	bucket := "role-" + randHex(6)
	mkBucket(t, cl, bucket)
	pid := srv.policyAdd(t, "FOR TENANT "+tenant+" WHEN put_ops > 3 DO SET compression")[0].ID

	n := 0
	body := func() []byte { return logText(fmt.Sprintf("k%d", n), 64<<10) }
	if stored, _ := srv.putStored(t, cl, tenant, bucket, "before", body()); stored != int64(len(body())) {
		t.Fatalf("before any load an object is stored in %d bytes; want %d (uncompressed)", stored, len(body()))
	}

	// ~6 PUT/s until the controller process switches the policy on.
	deadline := time.Now().Add(30 * time.Second)
	for srv.policyByID(t, pid).State != "active" {
		if time.Now().After(deadline) {
			t.Fatalf("policy not active after 30 s of ~6 PUT/s: %+v", srv.policyByID(t, pid))
		}
		for end := time.Now().Add(time.Second); time.Now().Before(end); {
			n++
			putBytes(t, cl, bucket, fmt.Sprintf("fast-%04d", n), body())
			time.Sleep(160 * time.Millisecond)
		}
	}
	// Global controllers (QoS's bandwidth share) may run beside the
	// automation ones; these count the dynamic policies' controllers.
	if st := c1.waitLease("held"); st.automation() != 1 {
		t.Errorf("the controller process runs %d automation controllers; want 1 (the dynamic policy's): %+v", st.automation(), st)
	}
	if cs := srv.controllers(t); automationIn(cs) != 0 {
		t.Errorf("the gateway started with --controllers=false runs controllers: %+v", cs)
	}

	// The gateway follows the stored activation through its version poll.
	deadline = time.Now().Add(30 * time.Second)
	for {
		n++
		b := body()
		stored, _ := srv.putStored(t, cl, tenant, bucket, fmt.Sprintf("after-%04d", n), b)
		if stored < int64(len(b)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway still stores new objects uncompressed (%d of %d bytes) with the policy active", stored, len(b))
		}
		time.Sleep(200 * time.Millisecond)
	}

	// A second controller process waits as a standby...
	c2 := startController(t, "c2", env)
	deadline = time.Now().Add(30 * time.Second)
	for !c2.logContains("standby: another controller holds the lease") {
		if time.Now().After(deadline) {
			t.Fatal("the second controller never reported waiting as a standby")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st := c2.waitLease("standby"); len(st.Controllers) != 0 {
		t.Errorf("the standby runs controllers: %+v", st)
	}
	if st := c1.waitLease("held"); st.ID != "c1" {
		t.Errorf("first controller: %+v", st)
	}
	// ...and takes over when the active one stops.
	c1.stop()
	if st := c2.waitLease("held"); st.automation() != 1 {
		t.Errorf("the new holder runs %d automation controllers; want 1: %+v", st.automation(), st)
	}
}

// controllers is the gateway's GET /v1/controllers.
func (s *server) controllers(t *testing.T) []json.RawMessage {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+s.adminAddr+"/v1/controllers", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Controllers []json.RawMessage `json:"controllers"`
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("gateway GET /v1/controllers: %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	return list.Controllers
}

// automation counts the dynamic policies' controllers in a status.
func (st roleStatus) automation() int {
	n := 0
	for _, c := range st.Controllers {
		if strings.HasPrefix(c.ID, "automation/") {
			n++
		}
	}
	return n
}

// automationIn counts the dynamic policies' controllers in a gateway's
// GET /v1/controllers.
func automationIn(cs []json.RawMessage) int {
	n := 0
	for _, raw := range cs {
		var c struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(raw, &c) == nil && strings.HasPrefix(c.ID, "automation/") {
			n++
		}
	}
	return n
}
