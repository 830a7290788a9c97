package bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/facet-sds/facet/internal/bus"
)

// The scale-out benchmark (issue 9): `facet gateway` processes over a
// remote S3 store (versitygw, the pinned peer of bench/peers) with Redis
// and a bus, against the same requests sent straight to versitygw, in one
// run; then two gateways against one, with the CPU every process used.

// RemoteOptions configure RunRemote.
type RemoteOptions struct {
	// Dir holds versitygw's and Redis's files.
	Dir string
	// Scenarios are the gateway-vs-direct runs.
	Scenarios []SpineScenario
	// Scale is the two-gateways-vs-one run (small objects, many clients).
	Scale SpineScenario
	Log   io.Writer
}

// ScaleRow is one run of the scale comparison.
type ScaleRow struct {
	Op       string
	Gateways int
	Result   Result
	// CPU is the time each group of processes ran during the run.
	GatewayCPU, BackendCPU, RedisCPU, ClientCPU time.Duration
	// MachineBusy is the machine's average number of busy cores.
	MachineBusy float64
	Cores       int
}

// RemoteResult is what RunRemote measured.
type RemoteResult struct {
	Rows  []Comparison
	Scale []ScaleRow
}

// peerBinary is a peer installed by bench/peers/<name>.sh install.
func peerBinary(name string) (string, error) {
	cache := os.Getenv("FACET_PEERS_CACHE")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			base = filepath.Join(os.Getenv("HOME"), ".cache")
		}
		cache = filepath.Join(base, "facet-bench-peers")
	}
	bin := filepath.Join(cache, "bin", name)
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%s is not installed: run bench/peers/%s.sh install (make bench does): %w", name, name, err)
	}
	return bin, nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// child is a peer process (versitygw, redis-server).
type child struct {
	cmd *exec.Cmd
	serveProcess
}

func startChild(bin string, env []string, args ...string) (*child, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &child{cmd: cmd, serveProcess: serveProcess{pid: cmd.Process.Pid}}, nil
}

func (c *child) stop() {
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
}

func waitTCP(addr string) error {
	for range 300 {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s does not accept connections", addr)
}

// RunRemote runs the scale-out benchmark.
func RunRemote(ctx context.Context, o RemoteOptions) (RemoteResult, error) {
	var res RemoteResult
	vgwBin, err := peerBinary("versitygw")
	if err != nil {
		return res, err
	}
	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		return res, fmt.Errorf("redis-server not found (scripts/ensure-deps.sh installs it): %w", err)
	}
	secretBytes := make([]byte, 12)
	_, _ = rand.Read(secretBytes)
	access, secret := "benchroot", hex.EncodeToString(secretBytes)

	vgwAddr, err := freeAddr()
	if err != nil {
		return res, err
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, "vgw"), 0o700); err != nil {
		return res, err
	}
	// --keep-alive: versitygw closes every connection after one request
	// unless told otherwise, which would make both paths measure a TCP
	// connect per request (and the gateway one per backend call); the
	// object stores a gateway fronts in production keep connections.
	vgw, err := startChild(vgwBin, []string{"ROOT_ACCESS_KEY_ID=" + access, "ROOT_SECRET_ACCESS_KEY=" + secret},
		"--port", vgwAddr, "--health", "/health", "--keep-alive", "posix", filepath.Join(o.Dir, "vgw"))
	if err != nil {
		return res, err
	}
	defer vgw.stop()
	redisAddr, err := freeAddr()
	if err != nil {
		return res, err
	}
	_, redisPort, _ := net.SplitHostPort(redisAddr)
	rds, err := startChild(redisBin, nil, "--port", redisPort, "--bind", "127.0.0.1", "--dir", o.Dir, "--save", "", "--appendonly", "no")
	if err != nil {
		return res, err
	}
	defer rds.stop()
	busSrv, err := bus.StartServer(bus.ServerOptions{Name: "bench-bus", Addr: "127.0.0.1:0"})
	if err != nil {
		return res, err
	}
	defer busSrv.Close()
	for _, a := range []string{vgwAddr, redisAddr} {
		if err := waitTCP(a); err != nil {
			return res, err
		}
	}
	direct := &gateway{s3URL: "http://" + vgwAddr, accessKey: access, secret: secret,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}, signer: v4.NewSigner()}
	for _, b := range []string{"/facet", "/direct"} {
		if err := direct.do(ctx, http.MethodPut, b, nil, 0, nil); err != nil {
			return res, fmt.Errorf("versitygw create bucket %s: %w", b, err)
		}
	}

	mk := make([]byte, 32)
	_, _ = rand.Read(mk)
	const token = "bench-token-0123456789abcdef0123456789"
	env := []string{"FACET_META=redis://" + redisAddr + "/0", "FACET_BUS=" + busSrv.URL(),
		"FACET_BACKEND=s3://" + access + ":" + secret + "@" + vgwAddr + "/facet/bench?tls=false",
		"FACET_MASTER_KEY=" + base64.StdEncoding.EncodeToString(mk), "FACET_ADMIN_TOKEN=" + token}
	var gws []*gateway
	var procs []*serveProcess
	defer func() {
		for _, g := range gws {
			g.stop()
		}
	}()
	for i := range 2 {
		s3, admin, stop, proc, err := startFacetProcess(env, "gateway", "--s3-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--log-level", "info")
		if err != nil {
			return res, err
		}
		var g *gateway
		if i == 0 {
			if g, err = newGateway(ctx, s3, admin, token, stop); err != nil {
				return res, err
			}
		} else {
			second := *gws[0]
			second.s3URL, second.adminURL, second.stop = "http://"+s3, "http://"+admin, stop
			second.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
			g = &second
		}
		gws = append(gws, g)
		procs = append(procs, proc)
	}
	if err := gws[0].do(ctx, http.MethodPut, "/bench", nil, 0, nil); err != nil {
		return res, fmt.Errorf("create bucket through the gateway: %w", err)
	}

	for _, sc := range o.Scenarios {
		payload := make([]byte, sc.Size)
		_, _ = rand.Read(payload)
		label := fmt.Sprintf("%s c=%d", sizeLabel(sc.Size), sc.Concurrency)
		fmt.Fprintf(o.Log, "running %s ...\n", label)
		// Rounds alternate which path goes first, so that a change of the
		// machine's load does not favour one.
		var dPut, fPut, dGet, fGet roundsOf
		rounds := min(3, sc.Ops)
		rs := sc
		rs.Ops = sc.Ops / rounds
		for r := range rounds {
			off := r * rs.Ops
			viaDirect := func(method string) measured {
				return measure("versitygw direct", rs, func(i int) error {
					if method == http.MethodPut {
						return direct.do(ctx, method, "/direct/"+objKey(sc, off+i), payload, sc.Size, nil)
					}
					return direct.do(ctx, method, "/direct/"+objKey(sc, off+i), nil, 0, func(r io.Reader) error { return drain(r, sc.Size) })
				})
			}
			viaFacet := func(method string) measured {
				return measure("facet gateway", rs, func(i int) error {
					if method == http.MethodPut {
						return gws[0].do(ctx, method, "/bench/"+objKey(sc, off+i), payload, sc.Size, nil)
					}
					return gws[0].do(ctx, method, "/bench/"+objKey(sc, off+i), nil, 0, func(r io.Reader) error { return drain(r, sc.Size) })
				})
			}
			var dp, fp, dg, fg measured
			if r%2 == 0 {
				dp, fp = viaDirect(http.MethodPut), viaFacet(http.MethodPut)
				dg, fg = viaDirect(http.MethodGet), viaFacet(http.MethodGet)
			} else {
				fp, dp = viaFacet(http.MethodPut), viaDirect(http.MethodPut)
				fg, dg = viaFacet(http.MethodGet), viaDirect(http.MethodGet)
			}
			dPut.add(dp)
			fPut.add(fp)
			dGet.add(dg)
			fGet.add(fg)
		}
		for _, m := range []measured{dPut.total(), fPut.total(), dGet.total(), fGet.total()} {
			if m.err != nil {
				return res, fmt.Errorf("%s %s: %w", label, m.Name, m.err)
			}
		}
		res.Rows = append(res.Rows,
			Comparison{Op: "PUT " + label, Facet: fPut.total().Result, Direct: dPut.total().Result},
			Comparison{Op: "GET " + label, Facet: fGet.total().Result, Direct: dGet.total().Result})
	}

	sc := o.Scale
	payload := make([]byte, sc.Size)
	_, _ = rand.Read(payload)
	for _, n := range []int{1, 2} {
		for _, op := range []string{http.MethodPut, http.MethodGet} {
			fmt.Fprintf(o.Log, "running %s %s c=%d over %d gateway(s) ...\n", op, sizeLabel(sc.Size), sc.Concurrency, n)
			var gcpu0 time.Duration
			for _, p := range procs[:n] {
				gcpu0 += p.cpu()
			}
			vcpu0, rcpu0, ccpu0, busy0 := vgw.cpu(), rds.cpu(), processCPU(), machineBusy()
			m := measure(fmt.Sprintf("%d gateway(s)", n), sc, func(i int) error {
				g := gws[i%n]
				key := fmt.Sprintf("/bench/scale-%d/%06d", n, i)
				if op == http.MethodGet {
					key = fmt.Sprintf("/bench/scale-1/%06d", i)
					return g.do(ctx, op, key, nil, 0, func(r io.Reader) error { return drain(r, sc.Size) })
				}
				return g.do(ctx, op, key, payload, sc.Size, nil)
			})
			if m.err != nil {
				return res, fmt.Errorf("%s over %d gateways: %w", op, n, m.err)
			}
			var gcpu time.Duration
			for _, p := range procs[:n] {
				gcpu += p.cpu()
			}
			ccpu := processCPU()
			busy := machineBusy()
			row := ScaleRow{Op: op + " " + sizeLabel(sc.Size) + " c=" + strconv.Itoa(sc.Concurrency), Gateways: n, Result: m.Result,
				GatewayCPU: gcpu - gcpu0, BackendCPU: vgw.cpu() - vcpu0, RedisCPU: rds.cpu() - rcpu0,
				ClientCPU: (ccpu[0] + ccpu[1]) - (ccpu0[0] + ccpu0[1]), Cores: cores()}
			if busy.total > busy0.total {
				row.MachineBusy = float64(busy.busy-busy0.busy) / float64(busy.total-busy0.total) * float64(row.Cores)
			}
			res.Scale = append(res.Scale, row)
		}
	}
	return res, nil
}

// roundsOf collects one path's rounds; latency percentiles of the total
// are the median of the rounds'.
type roundsOf struct {
	rs  []Result
	err error
}

func (r *roundsOf) add(m measured) {
	r.rs = append(r.rs, m.Result)
	if r.err == nil {
		r.err = m.err
	}
}

func (r *roundsOf) total() measured { return measured{Result: combine(r.rs), err: r.err} }

type cpuTicks struct{ busy, total uint64 }

// machineBusy reads the machine's CPU ticks from /proc/stat (Linux; zero
// elsewhere).
func machineBusy() cpuTicks {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return cpuTicks{}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return cpuTicks{}
	}
	fields := strings.Fields(sc.Text())
	var t cpuTicks
	for i, v := range fields[1:] {
		n, _ := strconv.ParseUint(v, 10, 64)
		t.total += n
		if i != 3 && i != 4 { // idle, iowait
			t.busy += n
		}
	}
	return t
}

func cores() int {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "cpu") && !strings.HasPrefix(l, "cpu ") {
			n++
		}
	}
	return n
}

// WriteScale prints the two-gateways-vs-one runs with the CPU they cost.
func WriteScale(w io.Writer, rows []ScaleRow) {
	fmt.Fprintln(w, "| op | gateways | ops/s | MB/s | p50 ms | p99 ms | gateway CPU ms/op | versitygw CPU ms/op | redis CPU ms/op | client+bus CPU ms/op | busy cores (of machine) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	per := func(d time.Duration, ops int) string {
		return fmt.Sprintf("%.3f", float64(d.Microseconds())/1e3/float64(ops))
	}
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %d | %.1f | %.1f | %s | %s | %s | %s | %s | %s | %.2f of %d |\n", r.Op, r.Gateways, r.Result.OpsPerSec(), r.Result.MBPerSec(),
			ms(r.Result.P50), ms(r.Result.P99), per(r.GatewayCPU, r.Result.Ops), per(r.BackendCPU, r.Result.Ops), per(r.RedisCPU, r.Result.Ops),
			per(r.ClientCPU, r.Result.Ops), r.MachineBusy, r.Cores)
	}
}
