package sysdev

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture builds a proc and sys tree: a partitioned SATA disk with BFQ,
// an NVMe disk with none, and a tmpfs.
func fixture(t *testing.T) Reader {
	t.Helper()
	root := t.TempDir()
	proc, sys := filepath.Join(root, "proc"), filepath.Join(root, "sys")
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(proc, "self", "mountinfo"), strings.Join([]string{
		"27 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw",
		"28 27 8:1 /srv /data/bind rw - ext4 /dev/sda1 rw",
		"29 27 259:0 / /fast\\040disk rw shared:1 - xfs /dev/nvme0n1 rw",
		"30 27 0:25 / /run rw - tmpfs tmpfs rw",
		"garbage line",
	}, "\n")+"\n")
	sda := filepath.Join(sys, "devices", "pci0", "ata1", "block", "sda")
	write(filepath.Join(sda, "queue", "rotational"), "1\n")
	write(filepath.Join(sda, "queue", "scheduler"), "mq-deadline kyber [bfq] none\n")
	write(filepath.Join(sda, "dev"), "8:0\n")
	write(filepath.Join(sda, "sda1", "partition"), "1\n")
	nvme := filepath.Join(sys, "devices", "pci0", "nvme", "block", "nvme0n1")
	write(filepath.Join(nvme, "queue", "rotational"), "0\n")
	write(filepath.Join(nvme, "queue", "scheduler"), "[none] mq-deadline kyber\n")
	write(filepath.Join(nvme, "dev"), "259:0\n")
	for mm, target := range map[string]string{"8:1": filepath.Join(sda, "sda1"), "8:0": sda, "259:0": nvme} {
		link := filepath.Join(sys, "dev", "block", mm)
		_ = os.MkdirAll(filepath.Dir(link), 0o755)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"sda", "nvme0n1"} {
		target := sda
		if name == "nvme0n1" {
			target = nvme
		}
		link := filepath.Join(sys, "block", name)
		_ = os.MkdirAll(filepath.Dir(link), 0o755)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	return Reader{Proc: proc, Sys: sys}
}

func TestPlacementOfPartitionWithBFQ(t *testing.T) {
	r := fixture(t)
	p, err := r.placement("/data/bind/x/file", 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.Mount.Point != "/data/bind" || p.Mount.FSType != "ext4" || p.Mount.Source != "/dev/sda1" {
		t.Fatalf("mount %+v: want the longest matching mount point", p.Mount)
	}
	d := p.Device
	if d == nil || d.Name != "sda" || d.Partition != "sda1" || !d.Rotational || d.Type != "hdd" || d.Scheduler != "bfq" || !d.Priorities {
		t.Fatalf("device %+v", d)
	}
}

func TestPlacementOfNVMeWithoutScheduler(t *testing.T) {
	r := fixture(t)
	p, err := r.placement("/fast disk/obj", 259, 0)
	if err != nil {
		t.Fatal(err)
	}
	d := p.Device
	if p.Mount.Point != "/fast disk" || d == nil || d.Type != "ssd" || d.Scheduler != "none" || d.Priorities {
		t.Fatalf("placement %+v device %+v", p, d)
	}
	if !strings.Contains(d.PrioritiesNote, "ignores I/O priorities") {
		t.Fatalf("note %q does not say priorities cannot work", d.PrioritiesNote)
	}
}

func TestPlacementOfTmpfs(t *testing.T) {
	r := fixture(t)
	p, err := r.placement("/run/x", 0, 25)
	if err != nil {
		t.Fatal(err)
	}
	if p.Device != nil || !strings.Contains(p.Note, "tmpfs") {
		t.Fatalf("%+v", p)
	}
	if _, err := r.placement("/nowhere", 9, 9); err == nil {
		t.Fatal("a device without a mount must fail")
	}
}

func TestDisks(t *testing.T) {
	ds, err := fixture(t).Disks()
	if err != nil || len(ds) != 2 {
		t.Fatalf("%v %+v", err, ds)
	}
	for _, d := range ds {
		if d.MajorMinor == "" || d.Scheduler == "" {
			t.Fatalf("%+v", d)
		}
	}
}

func TestParseScheduler(t *testing.T) {
	for in, want := range map[string]string{"none [mq-deadline] kyber bfq": "mq-deadline", "[none]": "none", "none": "none", "": ""} {
		if got, _ := ParseScheduler(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
	if ok, note := Honours("vda", "mq-deadline", []string{"none", "mq-deadline", "bfq"}); ok || !strings.Contains(note, "echo bfq") {
		t.Errorf("%v %q", ok, note)
	}
}

// The live system: the test's own temp dir has a mount, and a device or
// a note saying why not.
func TestForPathLive(t *testing.T) {
	p, err := Reader{}.ForPath(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if p.Mount.Point == "" || (p.Device == nil && p.Note == "") {
		t.Fatalf("%+v", p)
	}
	if p.Device != nil && p.Device.PrioritiesNote == "" {
		t.Fatalf("%+v", p.Device)
	}
}

func FuzzParseMountinfo(f *testing.F) {
	f.Add("27 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw")
	f.Add("29 27 259:0 / /fast\\040disk rw shared:1 - xfs /dev/nvme0n1 rw")
	f.Add("1 2 3 4 5 6 -")
	f.Fuzz(func(t *testing.T, line string) {
		m, dev, ok := parseMountinfo(line)
		if ok && (dev == "" || m.FSType == "") {
			t.Fatalf("%q: %+v %q", line, m, dev)
		}
		_ = unescape(line)
	})
}

func TestDiskIO(t *testing.T) {
	r := fixture(t)
	if err := os.WriteFile(filepath.Join(r.Proc, "diskstats"), []byte(
		"   8       0 sda 100 0 2048 10 50 0 4096 20 0 30 30 0 0 0 0\n"+
			"   8       1 sda1 90 0 1024 9 40 0 512 19 0 28 28\n"+
			" 259       0 nvme0n1 bad line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if io, err := r.DiskIO("sda"); err != nil || io != (DiskIO{Read: 2048 * 512, Written: 4096 * 512}) {
		t.Fatalf("sda: %+v %v", io, err)
	}
	if io, err := r.DiskIO("sda1"); err != nil || io != (DiskIO{Read: 1024 * 512, Written: 512 * 512}) {
		t.Fatalf("sda1: %+v %v", io, err)
	}
	if _, err := r.DiskIO("nvme0n1"); err == nil {
		t.Fatal("a short line accepted")
	}
	if _, err := r.DiskIO("sdz"); err == nil {
		t.Fatal("a missing device accepted")
	}
	// The live file has this machine's disks.
	if disks, err := (Reader{}).Disks(); err == nil && len(disks) > 0 {
		if _, err := (Reader{}).DiskIO(disks[0].Name); err != nil {
			t.Fatal(err)
		}
	}
}
