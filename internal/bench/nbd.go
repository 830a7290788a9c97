package bench

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/facet-sds/facet/internal/block"
	"github.com/facet-sds/facet/internal/block/nbd"
	"github.com/facet-sds/facet/internal/keys"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/policy"
)

// NBDOptions configures the block-storage benchmark (facet bench nbd).
type NBDOptions struct {
	Dir     string        // scratch directory for pools and nbdkit's file
	Runtime time.Duration // per fio job (default 8 s)
	Size    int64         // bytes each volume and file holds (default 512 MiB)
	Out     io.Writer     // the report
	Log     io.Writer     // progress lines (nil: none)
	// Only runs a subset: "vs-nbdkit", "throttle", "filters", "tls"
	// (empty: all).
	Only string
	// Slots is each pool's I/O concurrency (block.Config.Slots; 0: default).
	Slots int
	// Rounds is how many times each server runs each workload, the
	// servers alternating (default 3); the median is reported.
	Rounds int
	// Workloads, when set, limits the Facet-vs-nbdkit table to these fio
	// rw modes (randread, randwrite, read, write).
	Workloads []string
}

// nbdBench is a running Facet block stage in this process, with the
// same metadata store, placement, policy compiler and NBD server as
// `facet serve`.
type nbdBench struct {
	opts  NBDOptions
	store *meta.Store
	mgr   *block.Manager
	addr  string
	table *policy.Table
}

func (b *nbdBench) VolumeTable() *policy.Table { return b.table }

func (b *nbdBench) logf(format string, args ...any) {
	if b.opts.Log != nil {
		fmt.Fprintf(b.opts.Log, format+"\n", args...)
	}
}

// RunNBD measures Facet's NBD server against nbdkit's file plugin with
// fio's nbd engine, the sources' throttling experiment, and the cost of
// the xor and encryption filters, and writes a Markdown report.
func RunNBD(ctx context.Context, o NBDOptions) error {
	if o.Runtime <= 0 {
		o.Runtime = 8 * time.Second
	}
	if o.Size <= 0 {
		o.Size = 512 << 20
	}
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	for _, tool := range []string{"fio", "nbdkit"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("bench nbd needs %s (scripts/ensure-deps.sh installs it): %w", tool, err)
		}
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return err
	}
	mk := make([]byte, meta.MasterKeySize)
	rand.Read(mk)
	store, err := meta.OpenURL(ctx, "", o.Dir, mk, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer store.Close()
	b := &nbdBench{opts: o, store: store}
	if err := b.setPolicies(""); err != nil {
		return err
	}
	kp, err := keys.New(mk, nil, 0)
	if err != nil {
		return err
	}
	b.mgr = block.New(block.Config{Store: store, Policies: b, Keys: kp, Poll: 50 * time.Millisecond, Slots: o.Slots})
	if _, err := store.CreateTenant(ctx, "bench"); err != nil {
		return err
	}
	// fio and nbdkit comparisons run in plain NBD on loopback (the bench
	// measures the data path; its tls part measures TLS-PSK's cost).
	if _, err := store.SetTenantPlainNBD(ctx, "bench", true); err != nil {
		return err
	}
	if _, err := b.mgr.CreatePool(ctx, meta.Pool{Name: "seq", Dir: filepath.Join(o.Dir, "pool-seq"), Capacity: 64 << 30, SeqBW: 10e9, Usage: block.ClassSequential}); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	b.addr = ln.Addr().String()
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	srv := nbd.New(nbd.Config{Exports: b.mgr, TLS: b.mgr.NBDTLS(nil), PlainAllowed: nbd.PlainLoopback})
	go srv.Serve(sctx, ln)
	go b.mgr.Run(sctx)

	fmt.Fprintf(o.Out, "## Block storage over NBD (facet bench nbd)\n\nfio %s, nbd engine, %s per job, %d MiB per volume, on %s, %d CPUs, load average %s at the start.\n\n",
		toolVersion("fio"), o.Runtime, o.Size>>20, time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), loadAvg())
	if o.Only == "" || o.Only == "vs-nbdkit" {
		if err := b.vsNbdkit(ctx); err != nil {
			return err
		}
	}
	if o.Only == "" || o.Only == "throttle" {
		if err := b.throttleExperiment(ctx); err != nil {
			return err
		}
	}
	if o.Only == "" || o.Only == "filters" {
		if err := b.filters(ctx); err != nil {
			return err
		}
	}
	if o.Only == "" || o.Only == "tls" {
		if err := b.tlsCost(ctx); err != nil {
			return err
		}
	}
	return nil
}

// setPolicies compiles the policy text into the table the manager reads.
func (b *nbdBench) setPolicies(text string) error {
	var pols []*policy.Policy
	if text != "" {
		vols, err := b.store.ListVolumes(context.Background())
		if err != nil {
			return err
		}
		v := &policy.StaticVocabulary{Blocks: block.PolicyFilters(nil)}
		for _, x := range vols {
			v.Volumes = append(v.Volumes, x.Name)
		}
		if pols, err = policy.ParseAndCheck("bench", text, v); err != nil {
			return err
		}
	}
	c, err := policy.Compile(pols, nil)
	if err != nil {
		return err
	}
	b.table = c.Static()
	if b.mgr != nil {
		return b.mgr.Reload(context.Background())
	}
	return nil
}

func (b *nbdBench) volume(ctx context.Context, name string) (string, error) {
	_, err := b.mgr.CreateVolume(ctx, meta.Volume{Name: name, Tenant: "bench", Size: b.opts.Size, Class: block.ClassSequential, SeqBW: 1e6})
	if err != nil {
		return "", err
	}
	return "nbd://" + b.addr + "/" + name, nil
}

// fioJob is one fio job section.
type fioJob struct {
	name, uri, rw string
	bs            string
	depth         int
}

type fioResult struct {
	Jobs []struct {
		Name  string `json:"jobname"`
		Error int    `json:"error"`
		Read  struct {
			BW   float64 `json:"bw_bytes"`
			IOPS float64 `json:"iops"`
		} `json:"read"`
		Write struct {
			BW   float64 `json:"bw_bytes"`
			IOPS float64 `json:"iops"`
		} `json:"write"`
	} `json:"jobs"`
}

// fio runs jobs concurrently (one fio process) and returns per-job
// bytes/s and IOPS of the direction each job does.
func (b *nbdBench) fio(ctx context.Context, runtime time.Duration, jobs ...fioJob) (bw, iops []float64, err error) {
	args := []string{"--output-format=json", "--ioengine=nbd", "--group_reporting=0", "--randrepeat=0",
		"--size=" + strconv.FormatInt(b.opts.Size, 10)}
	if runtime > 0 {
		args = append(args, "--time_based", "--runtime="+strconv.Itoa(int(runtime.Seconds())), "--ramp_time=1")
	}
	for _, j := range jobs {
		args = append(args, "--name="+j.name, "--uri="+j.uri, "--rw="+j.rw, "--bs="+j.bs, "--iodepth="+strconv.Itoa(j.depth))
	}
	cctx, cancel := context.WithTimeout(ctx, runtime+5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(cctx, "fio", args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, nil, fmt.Errorf("fio: %w: %s", err, ee.Stderr)
		}
		return nil, nil, fmt.Errorf("fio: %w", err)
	}
	var res fioResult
	if i := strings.IndexByte(string(out), '{'); i >= 0 {
		out = out[i:]
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, nil, fmt.Errorf("fio output: %w", err)
	}
	if len(res.Jobs) != len(jobs) {
		return nil, nil, fmt.Errorf("fio reported %d jobs, ran %d", len(res.Jobs), len(jobs))
	}
	for i, j := range res.Jobs {
		if j.Error != 0 {
			return nil, nil, fmt.Errorf("fio job %s: error %d", j.Name, j.Error)
		}
		if strings.Contains(jobs[i].rw, "write") {
			bw, iops = append(bw, j.Write.BW), append(iops, j.Write.IOPS)
		} else {
			bw, iops = append(bw, j.Read.BW), append(iops, j.Read.IOPS)
		}
	}
	return bw, iops, nil
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func toolVersion(name string) string {
	out, err := exec.Command(name, "--version").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}

// startNbdkit serves file with nbdkit's file plugin on a free port;
// extra are nbdkit options (TLS).
func startNbdkit(ctx context.Context, file string, extra ...string) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	args := append([]string{"-f", "--exit-with-parent", "-i", "127.0.0.1", "-p", port}, extra...)
	cmd := exec.CommandContext(ctx, "nbdkit", append(args, "file", "file="+file)...)
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	for range 100 {
		if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
			c.Close()
			return "nbd://127.0.0.1:" + port + "/", stop, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	return "", nil, errors.New("nbdkit did not start")
}

func (b *nbdBench) vsNbdkit(ctx context.Context) error {
	fv, err := b.volume(ctx, "vs")
	if err != nil {
		return err
	}
	file := filepath.Join(b.opts.Dir, "nbdkit.img")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		return err
	}
	if err := os.Truncate(file, b.opts.Size); err != nil {
		return err
	}
	ku, stop, err := startNbdkit(ctx, file)
	if err != nil {
		return err
	}
	defer stop()
	// Fill both with data first, so reads read data, not holes.
	for _, u := range []string{fv, ku} {
		if _, _, err := b.fio(ctx, 0, fioJob{name: "fill", uri: u, rw: "write", bs: "1m", depth: 4}); err != nil {
			return err
		}
	}
	fmt.Fprintf(b.opts.Out, "### fio through Facet's NBD server vs nbdkit %s's file plugin\n\n", strings.TrimPrefix(toolVersion("nbdkit"), "nbdkit "))
	fmt.Fprintf(b.opts.Out, "Same disk, same fio job; %d rounds alternate the servers, medians shown.\n\n", b.opts.Rounds)
	fmt.Fprintf(b.opts.Out, "| workload | Facet | nbdkit file | Facet / nbdkit |\n|---|---:|---:|---:|\n")
	for _, w := range []struct {
		label, rw, bs string
		depth         int
		iops          bool
	}{
		{"4 KiB random read, iodepth 32", "randread", "4k", 32, true},
		{"4 KiB random write, iodepth 32", "randwrite", "4k", 32, true},
		{"1 MiB sequential read, iodepth 8", "read", "1m", 8, false},
		{"1 MiB sequential write, iodepth 8", "write", "1m", 8, false},
	} {
		if len(b.opts.Workloads) > 0 && !slices.Contains(b.opts.Workloads, w.rw) {
			continue
		}
		// Rounds alternate the servers; the median of each is kept, so
		// that a burst of load elsewhere on the machine hits both.
		var runs [2][]float64
		for range b.opts.Rounds {
			for i, u := range []string{fv, ku} {
				bw, iops, err := b.fio(ctx, b.opts.Runtime, fioJob{name: w.rw, uri: u, rw: w.rw, bs: w.bs, depth: w.depth})
				if err != nil {
					return err
				}
				v := bw[0] / 1e6
				if w.iops {
					v = iops[0]
				}
				runs[i] = append(runs[i], v)
			}
		}
		vals := [2]float64{median(runs[0]), median(runs[1])}
		unit := "MB/s"
		if w.iops {
			unit = "IOPS"
		}
		b.logf("%s: facet %.0f %s %.0f, nbdkit %.0f %s %.0f", w.label, vals[0], unit, runs[0], vals[1], unit, runs[1])
		fmt.Fprintf(b.opts.Out, "| %s | %.0f %s | %.0f %s | %.2f× |\n", w.label, vals[0], unit, vals[1], unit, vals[0]/vals[1])
	}
	fmt.Fprintln(b.opts.Out)
	return nil
}

// filters measures the cost of the xor and encryption filters against
// the same volume layout without filters.
func (b *nbdBench) filters(ctx context.Context) error {
	stacks := []struct{ name, policy string }{
		{"none", ""},
		{"xor", "FOR VOLUME f-xor DO SET xor WITH key=0x55"},
		{"encryption (AES-256-XTS)", "FOR VOLUME f-encryption DO SET encryption"},
	}
	vols := []string{"f-none", "f-xor", "f-encryption"}
	var uris []string
	var pol strings.Builder
	for i, v := range vols {
		u, err := b.volume(ctx, v)
		if err != nil {
			return err
		}
		uris = append(uris, u)
		if stacks[i].policy != "" {
			pol.WriteString(stacks[i].policy + "\n")
		}
	}
	if err := b.setPolicies(pol.String()); err != nil {
		return err
	}
	for _, u := range uris {
		if _, _, err := b.fio(ctx, 0, fioJob{name: "fill", uri: u, rw: "write", bs: "1m", depth: 4}); err != nil {
			return err
		}
	}
	fmt.Fprintf(b.opts.Out, "### Cost of block filters\n\nOne volume per stack, one after the other; relative to no filter.\n\n| filter | 1 MiB seq write | 1 MiB seq read | 4 KiB randread |\n|---|---:|---:|---:|\n")
	var base [3]float64
	for i, u := range uris {
		var cells []string
		for k, w := range []struct {
			rw, bs string
			depth  int
		}{{"write", "1m", 8}, {"read", "1m", 8}, {"randread", "4k", 32}} {
			bw, iops, err := b.fio(ctx, b.opts.Runtime, fioJob{name: w.rw, uri: u, rw: w.rw, bs: w.bs, depth: w.depth})
			if err != nil {
				return err
			}
			v, unit := bw[0]/1e6, "MB/s"
			if w.bs == "4k" {
				v, unit = iops[0], "IOPS"
			}
			if i == 0 {
				base[k] = v
			}
			cells = append(cells, fmt.Sprintf("%.0f %s (%.2f×)", v, unit, v/base[k]))
		}
		b.logf("filter %s: %s", stacks[i].name, strings.Join(cells, ", "))
		fmt.Fprintf(b.opts.Out, "| %s | %s |\n", stacks[i].name, strings.Join(cells, " | "))
	}
	fmt.Fprintln(b.opts.Out)
	return nil
}
