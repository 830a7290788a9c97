package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Dynamic policies across separate processes (issue 5): `facet bus` on its
// own, `facet serve --bus nats://...` joined to it. The bus goes down and
// comes back while a client keeps using the gateway.

// busProc is one running `facet bus` process.
type busProc struct {
	addr    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
}

// startBus runs `facet bus --addr addr` and waits until it accepts
// connections; it is killed when the test ends.
func startBus(t *testing.T, addr string, extra ...string) *busProc {
	t.Helper()
	logf, err := os.CreateTemp(t.TempDir(), "facet-bus-*.log")
	if err != nil {
		t.Fatal(err)
	}
	b := &busProc{addr: addr, logPath: logf.Name(), done: make(chan struct{})}
	b.cmd = exec.Command(facetBin, append([]string{"bus", "--addr", addr}, extra...)...)
	b.cmd.Stdout, b.cmd.Stderr = logf, logf
	if err := b.cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	go func() {
		_ = b.cmd.Wait()
		logf.Close()
		close(b.done)
	}()
	t.Cleanup(b.kill9)
	deadline := time.Now().Add(startupTimeout)
	for {
		select {
		case <-b.done:
			log, _ := os.ReadFile(b.logPath)
			t.Fatalf("facet bus exited early:\n%s", log)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("facet bus does not accept connections on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (b *busProc) kill9() {
	select {
	case <-b.done:
		return
	default:
	}
	_ = b.cmd.Process.Signal(syscall.SIGKILL)
	<-b.done
}

// metricPeriod returns the period of the latest merged value of metric for
// target, from GET /v1/metrics/{metric}?target=.
func (s *server) metricPeriod(t *testing.T, metric, target string) (time.Time, float64) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+s.adminAddr+"/v1/metrics/"+metric+"?target="+target, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		Period time.Time `json:"period"`
		Values []struct {
			Target string  `json:"target"`
			Value  float64 `json:"value"`
		} `json:"values"`
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/metrics/%s?target=%s: %d", metric, target, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("GET /v1/metrics/%s: %v", metric, err)
	}
	for _, v := range m.Values {
		if v.Target == target {
			return m.Period, v.Value
		}
	}
	return m.Period, -1
}

// dynPolicy is a policy as `facet ctl policy list -o json` prints it, with
// the reason for its state.
type dynPolicy struct {
	ID     string `json:"id"`
	State  string `json:"state"`
	Reason string `json:"reason"`
}

func (s *server) policyByID(t *testing.T, id string) dynPolicy {
	t.Helper()
	out, err := s.ctl(t, "policy", "list", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Policies []dynPolicy `json:"policies"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("policy list -o json: %v\n%s", err, out)
	}
	for _, p := range res.Policies {
		if p.ID == id {
			return p
		}
	}
	t.Fatalf("policy %s is not listed: %s", id, out)
	return dynPolicy{}
}

// TestDynamicBusDownAndBackUp: a TRANSIENT compression policy is switched on
// by load; the bus is killed; the gateway keeps serving every request with
// the policy table it had (compression still on: the controller holds its
// decision rather than reading the silence as an idle tenant); the bus comes
// back on the same port; metrics resume, and the now quiet tenant's policy
// reverts after its hold-down.
func TestDynamicBusDownAndBackUp(t *testing.T) {
	addr := freeAddr(t)
	bus := startBus(t, addr)
	srv := startServerEnv(t, t.TempDir(), "e2e-admin-"+randHex(16),
		[]string{"FACET_BUS=nats://" + addr, "FACET_METRICS_PERIOD=1s"})
	tenant := "busdown" + randHex(3)
	c := srv.createTenant(t, tenant)
	cl := srv.sdk(c)
	bucket := "dyn-" + randHex(6)
	mkBucket(t, cl, bucket)
	added := srv.policyAdd(t, "FOR TENANT "+tenant+" WHEN put_ops > 3 DO SET compression TRANSIENT")[0]
	if added.State != "pending" {
		t.Fatalf("new dynamic policy is %q; want pending", added.State)
	}
	pid := added.ID

	n := 0
	body := func() []byte { return logText(fmt.Sprintf("k%d", n), 64<<10) }
	putGet := func(stage string) int64 {
		t.Helper()
		n++
		key := fmt.Sprintf("obj-%04d", n)
		b := body()
		stored, _ := srv.putStored(t, cl, tenant, bucket, key, b)
		assertContent(t, cl, bucket, key, b)
		if t.Failed() {
			t.Fatalf("%s: PUT/GET %s failed", stage, key)
		}
		return stored
	}
	fast := func(d time.Duration) {
		t.Helper()
		for end := time.Now().Add(d); time.Now().Before(end); {
			n++
			putBytes(t, cl, bucket, fmt.Sprintf("fast-%04d", n), body())
			time.Sleep(100 * time.Millisecond)
		}
	}

	// Load switches the policy on.
	deadline := time.Now().Add(20 * time.Second)
	for srv.policyByID(t, pid).State != "active" {
		if time.Now().After(deadline) {
			t.Fatalf("policy not active after 20 s of ~8 PUT/s: %+v", srv.policyByID(t, pid))
		}
		fast(500 * time.Millisecond)
	}
	fast(time.Second) // the last periods the controller hears of are busy ones
	bus.kill9()
	killed := time.Now()
	lastBefore, _ := srv.metricPeriod(t, "put_ops", "tenant:"+tenant)

	// Bus down: light traffic, every request answered, with the last table.
	var downPuts int
	for time.Since(killed) < 7*time.Second {
		if stored := putGet("bus down"); stored >= 64<<10/2 {
			t.Errorf("bus down: object stored in %d of %d bytes; want compressed (the last policy table)", stored, 64<<10)
		}
		downPuts++
		time.Sleep(500 * time.Millisecond)
	}
	if p := srv.policyByID(t, pid); p.State != "active" {
		t.Errorf("bus down %v: policy %s is %q (%s); want it held active: silence is not an idle workload", time.Since(killed).Round(time.Millisecond), pid, p.State, p.Reason)
	}
	if period, _ := srv.metricPeriod(t, "put_ops", "tenant:"+tenant); period.After(lastBefore.Add(2 * time.Second)) {
		t.Errorf("bus down: put_ops has a period %v, after %v: where from?", period, lastBefore)
	}

	// Bus back on the same port: metrics resume.
	startBus(t, addr)
	restarted := time.Now()
	deadline = time.Now().Add(20 * time.Second)
	for {
		period, _ := srv.metricPeriod(t, "put_ops", "tenant:"+tenant)
		if period.After(restarted) {
			t.Logf("bus down for %v (%d PUT+GET served); fresh put_ops period %v, %v after the restart",
				restarted.Sub(killed).Round(time.Millisecond), downPuts, period.Format(time.RFC3339), time.Since(restarted).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no put_ops period after the bus restart at %v within 20 s (latest %v)", restarted, period)
		}
		putGet("bus back")
		time.Sleep(500 * time.Millisecond)
	}

	// The quiet tenant's TRANSIENT policy now reverts: the controller hears values again.
	deadline = time.Now().Add(25 * time.Second)
	for {
		p := srv.policyByID(t, pid)
		if p.State == "pending" {
			t.Logf("policy reverted %v after the bus restart: %s", time.Since(restarted).Round(time.Millisecond), p.Reason)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("policy %s still %q 25 s after the bus came back: %s", pid, p.State, p.Reason)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if stored := putGet("after revert"); stored != 64<<10 {
		t.Errorf("after the revert: object stored in %d of %d bytes; want as written", stored, 64<<10)
	}
}
