package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/facet-sds/facet/internal/block"
	"github.com/facet-sds/facet/internal/meta"
)

// tlsVolumeSize is the volume (and nbdkit file) the TLS part copies,
// several times per measurement.
const tlsVolumeSize = 64 << 20

// tlsCost measures what TLS-PSK costs NBD: nbdcopy (libnbd, GnuTLS)
// through Facet in plain NBD and over STARTTLS with the tenant's TLS 1.3
// PSK, and nbdkit's file plugin with the same PSK (--tls=require
// --tls-psk, GnuTLS on the server side too) as the reference. fio's nbd
// engine cannot take part: libnbd refuses the tls-psk-file of a URI
// unless the program allows local files, and fio does not.
func (b *nbdBench) tlsCost(ctx context.Context) error {
	if _, err := exec.LookPath("nbdcopy"); err != nil {
		return fmt.Errorf("bench nbd tls needs nbdcopy (libnbd-bin; scripts/ensure-deps.sh installs it): %w", err)
	}
	if _, err := b.mgr.CreateVolume(ctx, meta.Volume{Name: "tls", Tenant: "bench", Size: tlsVolumeSize, Class: block.ClassSequential, SeqBW: 1e6}); err != nil {
		return err
	}
	k, err := b.mgr.CreateClientPSK(ctx, "bench")
	if err != nil {
		return err
	}
	pskFile := filepath.Join(b.opts.Dir, "bench.psk")
	if err := os.WriteFile(pskFile, []byte(k.PSKFile), 0o600); err != nil {
		return err
	}
	file, src := filepath.Join(b.opts.Dir, "nbdkit-tls.img"), filepath.Join(b.opts.Dir, "tls-src.img")
	data := make([]byte, tlsVolumeSize)
	rand.Read(data)
	if err := os.WriteFile(src, data, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		return err
	}
	ku, stop, err := startNbdkit(ctx, file, "--tls=require", "--tls-psk="+pskFile)
	if err != nil {
		return err
	}
	defer stop()
	uris := []string{
		"nbd://" + b.addr + "/tls",
		"nbds://bench@" + b.addr + "/tls?tls-psk-file=" + pskFile,
		strings.Replace(ku, "nbd://", "nbds://bench@", 1) + "?tls-psk-file=" + pskFile,
	}
	if _, err := nbdcopyRate(ctx, src, uris[0], 1<<20, 8, 1); err != nil {
		return err
	}
	fmt.Fprintf(b.opts.Out, "### The cost of TLS-PSK (STARTTLS, TLS 1.3 PSK, the tenant's key)\n\n")
	fmt.Fprintf(b.opts.Out, "nbdcopy (libnbd, GnuTLS %s) over one connection copies a %d MiB volume out to `null:` (reads) or in from a cached file (writes), several times per measurement: through Facet in plain NBD, through Facet over TLS-PSK (`nbds://bench@…?tls-psk-file=…`), and through nbdkit's file plugin with `--tls=require --tls-psk` (GnuTLS on both ends) as the reference. %d rounds alternate the three, medians shown.\n\n",
		gnutlsVersion(), tlsVolumeSize>>20, b.opts.Rounds)
	fmt.Fprintf(b.opts.Out, "| workload | Facet plain | Facet TLS-PSK | PSK / plain | nbdkit TLS-PSK | Facet PSK / nbdkit PSK |\n|---|---:|---:|---:|---:|---:|\n")
	for _, w := range []struct {
		label       string
		write       bool
		size, depth int
		repeat      int
	}{
		{"4 KiB reads, 32 in flight", false, 4 << 10, 32, 2},
		{"4 KiB writes, 32 in flight", true, 4 << 10, 32, 2},
		{"1 MiB reads, 8 in flight", false, 1 << 20, 8, 8},
		{"1 MiB writes, 8 in flight", true, 1 << 20, 8, 8},
	} {
		var runs [3][]float64
		for range b.opts.Rounds {
			for i, u := range uris {
				from, to := u, "null:"
				if w.write {
					from, to = src, u
				}
				rate, err := nbdcopyRate(ctx, from, to, w.size, w.depth, w.repeat)
				if err != nil {
					return err
				}
				v := rate / 1e6
				if w.size < 1<<20 {
					v = rate / float64(w.size)
				}
				runs[i] = append(runs[i], v)
			}
		}
		v := [3]float64{median(runs[0]), median(runs[1]), median(runs[2])}
		unit := "MB/s"
		if w.size < 1<<20 {
			unit = "IOPS"
		}
		b.logf("%s: facet plain %.0f, facet psk %.0f, nbdkit psk %.0f %s", w.label, v[0], v[1], v[2], unit)
		fmt.Fprintf(b.opts.Out, "| %s | %.0f %s | %.0f %s | %.2f× | %.0f %s | %.2f× |\n", w.label, v[0], unit, v[1], unit, v[1]/v[0], v[2], unit, v[1]/v[2])
	}
	fmt.Fprintln(b.opts.Out)
	return nil
}

// nbdcopyRate copies from to to repeat times with requests of size, depth
// in flight on one connection, and returns bytes per second.
func nbdcopyRate(ctx context.Context, from, to string, size, depth, repeat int) (float64, error) {
	args := []string{"--connections=1", "--threads=1", "--request-size=" + strconv.Itoa(size), "--requests=" + strconv.Itoa(depth), from, to}
	start := time.Now()
	for range repeat {
		out, err := exec.CommandContext(ctx, "nbdcopy", args...).CombinedOutput()
		if err != nil {
			return 0, fmt.Errorf("nbdcopy %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	d := time.Since(start)
	if d <= 0 {
		return 0, errors.New("nbdcopy took no time")
	}
	return float64(tlsVolumeSize) * float64(repeat) / d.Seconds(), nil
}

// gnutlsVersion is the installed GnuTLS (Debian's libgnutls30).
func gnutlsVersion() string {
	out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", "libgnutls30").Output()
	if err != nil || len(out) == 0 {
		return "?"
	}
	return string(out)
}
