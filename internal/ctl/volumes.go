package ctl

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/block"
	"github.com/facet-sds/facet/internal/meta"
)

// Commands for block storage: pools and volumes.

func (o *options) poolCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "pool", Short: "Manage the pools (device classes) that hold block volumes", Args: cobra.NoArgs}
	var req admin.CreatePoolRequest
	var capacity, seq string
	create := &cobra.Command{
		Use:   "create NAME --dir DIR --capacity 100GiB --usage sequential|random|best-effort [--seq-bw 500MB/s] [--iops 20000]",
		Short: "Declare a pool: a directory, its capacity, sequential MB/s, random IOPS and usage type",
		Args:  cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			req.Name = args[0]
			var err error
			if req.Capacity, err = parseBytes(capacity); err != nil {
				return fmt.Errorf("--capacity: %w", err)
			}
			if req.SeqBW, err = parseBytes(seq); err != nil {
				return fmt.Errorf("--seq-bw: %w", err)
			}
			var out meta.Pool
			if err := c.do(ctx, http.MethodPost, "/pools", req, &out); err != nil {
				return err
			}
			return p.done(out, "pool "+out.Name+" created")
		}),
	}
	f := create.Flags()
	f.StringVar(&req.Dir, "dir", "", "directory for the pool's backing files")
	f.StringVar(&capacity, "capacity", "", "capacity (bytes, or 100GiB, 1TB...)")
	f.StringVar(&seq, "seq-bw", "0", "sequential bandwidth the pool gives (500MB/s)")
	f.Int64Var(&req.RandIOPS, "iops", 0, "random 4 KiB IOPS the pool gives")
	f.StringVar(&req.Usage, "usage", "", "usage type: sequential, random or best-effort")
	cmd.AddCommand(create, &cobra.Command{
		Use:   "list",
		Short: "List pools with what is reserved on them",
		Args:  cobra.NoArgs,
		RunE: o.run(func(ctx context.Context, c *client, p *printer, _ []string) error {
			var pl admin.PoolList
			if err := c.do(ctx, http.MethodGet, "/pools", nil, &pl); err != nil {
				return err
			}
			rows := make([][]string, 0, len(pl.Pools))
			for _, u := range pl.Pools {
				usage := u.Usage
				if u.Default {
					usage += " (default pool)"
				}
				rows = append(rows, []string{u.Name, usage, u.Dir,
					fmt.Sprintf("%s/%s", size(u.ReservedCapacity), size(u.Capacity)),
					fmt.Sprintf("%s/%s", rate(u.ReservedSeqBW), rate(u.SeqBW)),
					fmt.Sprintf("%d/%d", u.ReservedIOPS, u.RandIOPS), orDash(strings.Join(u.Volumes, ","))})
			}
			return p.print(pl, []string{"NAME", "USAGE", "DIR", "CAPACITY", "SEQ-BW", "IOPS", "VOLUMES"}, rows)
		}),
	}, &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a pool that holds no volume",
		Args:  cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			if err := c.do(ctx, http.MethodDelete, "/pools/"+seg(args[0]), nil, nil); err != nil {
				return err
			}
			return p.done(map[string]string{"deleted": args[0]}, "pool "+args[0]+" deleted")
		}),
	})
	return cmd
}

func (o *options) volumeCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "volume", Short: "Manage block volumes (NBD exports)", Args: cobra.NoArgs}
	var req admin.CreateVolumeRequest
	var sz, seq string
	create := &cobra.Command{
		Use:   "create NAME --tenant T --size 10GiB [--class sequential --seq-bw 50MB/s | --class random --iops 5000 | --class cold | --class best-effort]",
		Short: "Create a volume; the reservation scheduler places it or says why it cannot",
		Args:  cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			req.Name = args[0]
			var err error
			if req.Size, err = parseBytes(sz); err != nil {
				return fmt.Errorf("--size: %w", err)
			}
			if req.SeqBW, err = parseBytes(seq); err != nil {
				return fmt.Errorf("--seq-bw: %w", err)
			}
			var out block.VolumeStatus
			if err := c.do(ctx, http.MethodPost, "/volumes", req, &out); err != nil {
				return err
			}
			return p.done(out, fmt.Sprintf("volume %s created on %s", out.Name, placement(out.Volume)))
		}),
	}
	f := create.Flags()
	f.StringVar(&req.Tenant, "tenant", "", "owner: the only tenant the volume is exported to")
	f.StringVar(&sz, "size", "", "size (bytes, or 10GiB...), a multiple of 512")
	f.StringVar(&req.Class, "class", "best-effort", "QoS class: sequential, random, cold or best-effort")
	f.StringVar(&seq, "seq-bw", "0", "reserved sequential bandwidth (sequential class)")
	f.Int64Var(&req.IOPS, "iops", 0, "reserved random 4 KiB IOPS (random class)")

	var thr [4]string
	throttle := &cobra.Command{
		Use:   "throttle NAME [--read-bw 3MB/s] [--write-bw 3MB/s] [--read-iops 3000] [--write-iops 3000]",
		Short: "Set a volume's read/write MB/s and IO/s caps (0 leaves the policy's); applies at once",
		Args:  cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			var t meta.Throttle
			for i, dst := range []*int64{&t.ReadBW, &t.WriteBW, &t.ReadIOPS, &t.WriteIOPS} {
				n, err := parseBytes(thr[i])
				if err != nil {
					return err
				}
				*dst = n
			}
			var out block.VolumeStatus
			if err := c.do(ctx, http.MethodPut, "/volumes/"+seg(args[0])+"/throttle", t, &out); err != nil {
				return err
			}
			return p.done(out, "volume "+out.Name+" throttle: "+throttleText(out.Effective))
		}),
	}
	tf := throttle.Flags()
	tf.StringVar(&thr[0], "read-bw", "0", "read bandwidth cap")
	tf.StringVar(&thr[1], "write-bw", "0", "write bandwidth cap")
	tf.StringVar(&thr[2], "read-iops", "0", "read operations per second cap")
	tf.StringVar(&thr[3], "write-iops", "0", "write operations per second cap")

	var certDir string
	cert := &cobra.Command{
		Use:   "client-cert TENANT --dir DIR",
		Short: "Issue a tenant's NBD TLS client certificate into DIR (ca-cert.pem, client-cert.pem, client-key.pem: qemu's tls-creds-x509 and libnbd's tls-certificates layout)",
		Args:  cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			if certDir == "" {
				return fmt.Errorf("--dir is required")
			}
			var cc block.ClientCert
			if err := c.do(ctx, http.MethodPost, "/nbd/clients", admin.NBDClientRequest{Tenant: args[0]}, &cc); err != nil {
				return err
			}
			if err := os.MkdirAll(certDir, 0o700); err != nil {
				return err
			}
			for name, body := range map[string]string{"ca-cert.pem": cc.CACert, "client-cert.pem": cc.ClientCert, "client-key.pem": cc.ClientKey} {
				if err := os.WriteFile(filepath.Join(certDir, name), []byte(body), 0o600); err != nil {
					return err
				}
			}
			return p.done(map[string]string{"tenant": cc.Tenant, "dir": certDir}, "NBD client certificate of "+cc.Tenant+" written to "+certDir)
		}),
	}
	cert.Flags().StringVar(&certDir, "dir", "", "directory to write the PEM files to")

	var pskFile string
	psk := &cobra.Command{
		Use:   "client-psk TENANT [--file FILE]",
		Short: "Create (or replace) a tenant's NBD TLS pre-shared key, the default way NBD clients authenticate: FILE gets the GnuTLS PSK line TENANT:HEXKEY (libnbd's tls-psk-file; qemu's tls-creds-psk reads DIR/keys.psk). The key is shown once.",
		Args:  cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			var k block.ClientPSK
			if err := c.do(ctx, http.MethodPost, "/nbd/psk", admin.NBDClientRequest{Tenant: args[0]}, &k); err != nil {
				return err
			}
			if pskFile == "" {
				return p.done(k, k.PSKFile)
			}
			if err := os.WriteFile(pskFile, []byte(k.PSKFile), 0o600); err != nil {
				return err
			}
			return p.done(map[string]string{"tenant": k.Tenant, "identity": k.Identity, "file": pskFile},
				"NBD pre-shared key of "+k.Tenant+" (identity "+k.Identity+") written to "+pskFile)
		}),
	}
	psk.Flags().StringVar(&pskFile, "file", "", "PSK file to write (mode 0600); without it the key is printed")
	revokePSK := &cobra.Command{
		Use:   "revoke-psk TENANT",
		Short: "Revoke a tenant's NBD pre-shared key",
		Args:  cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			if err := c.do(ctx, http.MethodDelete, "/nbd/psk/"+url.PathEscape(args[0]), nil, nil); err != nil {
				return err
			}
			return p.done(map[string]string{"tenant": args[0]}, "NBD pre-shared key of "+args[0]+" revoked")
		}),
	}

	cmd.AddCommand(create, throttle, cert, psk, revokePSK, o.volumeExplainCommand(), &cobra.Command{
		Use:   "resize NAME SIZE",
		Short: "Resize a volume on its pools",
		Args:  cobra.ExactArgs(2),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			n, err := parseBytes(args[1])
			if err != nil {
				return err
			}
			var out block.VolumeStatus
			if err := c.do(ctx, http.MethodPut, "/volumes/"+seg(args[0])+"/size", admin.ResizeVolumeRequest{Size: n}, &out); err != nil {
				return err
			}
			return p.done(out, fmt.Sprintf("volume %s is now %s", out.Name, size(out.Size)))
		}),
	}, &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a volume and its data",
		Args:  cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			if err := c.do(ctx, http.MethodDelete, "/volumes/"+seg(args[0]), nil, nil); err != nil {
				return err
			}
			return p.done(map[string]string{"deleted": args[0]}, "volume "+args[0]+" deleted")
		}),
	}, &cobra.Command{
		Use:   "show NAME",
		Short: "Show a volume: placement, filter stack and the policies it comes from, throttles, rates",
		Args:  cobra.ExactArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			var v block.VolumeStatus
			if err := c.do(ctx, http.MethodGet, "/volumes/"+seg(args[0]), nil, &v); err != nil {
				return err
			}
			if err := p.print(v, volumeHeader, [][]string{volumeRow(v)}); err != nil || p.json {
				return err
			}
			return p.members(v.Volume)
		}),
	}, &cobra.Command{
		Use:   "list [TENANT]",
		Short: "List volumes with placement, filters, throttles and rates",
		Args:  cobra.MaximumNArgs(1),
		RunE: o.run(func(ctx context.Context, c *client, p *printer, args []string) error {
			path := "/volumes"
			if len(args) == 1 {
				path += "?tenant=" + seg(args[0])
			}
			var vl admin.VolumeList
			if err := c.do(ctx, http.MethodGet, path, nil, &vl); err != nil {
				return err
			}
			rows := make([][]string, 0, len(vl.Volumes))
			for _, v := range vl.Volumes {
				rows = append(rows, volumeRow(v))
			}
			return p.print(vl, volumeHeader, rows)
		}),
	})
	return cmd
}

var volumeHeader = []string{"NAME", "TENANT", "SIZE", "CLASS", "PLACEMENT", "FILTERS", "THROTTLE", "READ", "WRITE"}

func volumeRow(v block.VolumeStatus) []string {
	class := v.Class
	switch {
	case v.SeqBW > 0:
		class += " " + rate(v.SeqBW)
	case v.IOPS > 0:
		class += fmt.Sprintf(" %d IOPS", v.IOPS)
	}
	var fs []string
	for _, s := range v.Filters {
		fs = append(fs, s.Filter)
	}
	return []string{v.Name, v.Tenant, size(v.Size), class, placement(v.Volume), orDash(strings.Join(fs, ",")), throttleText(v.Effective),
		fmt.Sprintf("%s %.0f IO/s", rate(int64(v.Rates.ReadBW)), v.Rates.ReadIOPS), fmt.Sprintf("%s %.0f IO/s", rate(int64(v.Rates.WriteBW)), v.Rates.WriteIOPS)}
}

func placement(v meta.Volume) string {
	var ps []string
	for _, e := range v.Extents {
		ps = append(ps, e.Pool)
	}
	if len(ps) > 1 {
		return "stripe(" + strings.Join(ps, ",") + ")"
	}
	return orDash(strings.Join(ps, ""))
}

// members prints a volume's stripe: each member's pool and its share of
// the volume's capacity and reservation, and the stripe unit, which
// -o json gives as extents.
func (p *printer) members(v meta.Volume) error {
	if len(v.Extents) == 0 {
		return nil
	}
	layout := "on one pool"
	if len(v.Extents) > 1 {
		layout = fmt.Sprintf("striped over %d pools, %s at a time each", len(v.Extents), size(block.StripeUnit))
	}
	if _, err := fmt.Fprintf(p.out, "\nMEMBERS (%s)\n", layout); err != nil {
		return err
	}
	rows := make([][]string, 0, len(v.Extents))
	for i, e := range v.Extents {
		rows = append(rows, []string{strconv.Itoa(i), e.Pool, size(e.Capacity), rate(e.SeqBW), strconv.FormatInt(e.IOPS, 10)})
	}
	return p.print(nil, []string{"#", "POOL", "CAPACITY", "SEQ-BW", "IOPS"}, rows)
}

func throttleText(t meta.Throttle) string {
	var parts []string
	if t.ReadBW > 0 {
		parts = append(parts, "r "+rate(t.ReadBW))
	}
	if t.WriteBW > 0 {
		parts = append(parts, "w "+rate(t.WriteBW))
	}
	if t.ReadIOPS > 0 {
		parts = append(parts, fmt.Sprintf("r %d IO/s", t.ReadIOPS))
	}
	if t.WriteIOPS > 0 {
		parts = append(parts, fmt.Sprintf("w %d IO/s", t.WriteIOPS))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// parseBytes reads "10GiB", "3MB/s", "512", "4k" as a number of bytes
// (per second); a bare number is taken as is.
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "/s"), "ps")
	if t == "" {
		return 0, nil
	}
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') && t[i-1] != '.' {
		i--
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q: want a size such as 512, 4KiB, 10GB or 3MB/s", s)
	}
	mult := map[string]float64{"": 1, "b": 1, "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
		"ki": 1 << 10, "kib": 1 << 10, "mi": 1 << 20, "mib": 1 << 20, "gi": 1 << 30, "gib": 1 << 30, "ti": 1 << 40, "tib": 1 << 40, "iops": 1}
	m, ok := mult[unit]
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", s, t[i:])
	}
	return int64(v * m), nil
}

func size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return strconv.FormatInt(n, 10)
}

func rate(n int64) string { return fmt.Sprintf("%.1fMB/s", float64(n)/1e6) }
