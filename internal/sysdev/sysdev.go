// Package sysdev owns what Facet learns about the block devices under its
// data: which device and mount hold a path (/proc/self/mountinfo, stat), and
// what kind of device it is and how the kernel schedules its I/O
// (/sys/dev/block, queue/rotational, queue/scheduler). It answers the data
// locality service and tells the storage stage whether I/O priorities
// (ioprio_set) can have any effect: only a scheduler that honours them (BFQ,
// or CFQ on old kernels) does; with none, mq-deadline or kyber they are
// silently ignored, and Facet must say so rather than pretend.
package sysdev

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Reader reads the kernel's view from a proc and a sys tree; the zero value
// reads the live /proc and /sys. Tests point it at fixture trees.
type Reader struct {
	Proc, Sys string
}

// Mount is the mount holding a path.
type Mount struct {
	Point  string `json:"mount_point"`
	FSType string `json:"fs_type"`
	Source string `json:"source"`
}

// Device describes the block device under a path.
type Device struct {
	// Name is the kernel name of the whole disk ("vda", "sda", "nvme0n1");
	// Partition is set when the filesystem sits on a partition of it.
	Name      string `json:"name"`
	Partition string `json:"partition,omitempty"`
	// MajorMinor is "254:0" as in /proc/self/mountinfo.
	MajorMinor string `json:"major_minor"`
	// Rotational is the kernel's queue/rotational flag (virtual disks
	// often claim 1 whatever is behind them).
	Rotational bool `json:"rotational"`
	// Type is "hdd" or "ssd" from Rotational, "" when unknown.
	Type string `json:"type"`
	// Scheduler is the active I/O scheduler; Schedulers the ones the
	// device could use.
	Scheduler  string   `json:"scheduler"`
	Schedulers []string `json:"schedulers,omitempty"`
	// Priorities reports whether I/O priorities set with ioprio_set reach
	// a scheduler that honours them; PrioritiesNote says why, in words.
	Priorities     bool   `json:"priorities"`
	PrioritiesNote string `json:"priorities_note"`
}

// Placement is where a path's bytes are: its mount and, when the
// filesystem has one, its block device.
type Placement struct {
	Path   string  `json:"path"`
	Mount  Mount   `json:"mount"`
	Device *Device `json:"device,omitempty"`
	// Note explains a missing Device (tmpfs, overlay, network fs).
	Note string `json:"note,omitempty"`
}

func (r Reader) proc() string {
	if r.Proc == "" {
		return "/proc"
	}
	return r.Proc
}

func (r Reader) sys() string {
	if r.Sys == "" {
		return "/sys"
	}
	return r.Sys
}

// ForPath returns where path lives. The path must exist.
func (r Reader) ForPath(path string) (Placement, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Placement{}, fmt.Errorf("sysdev: %w", err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(abs, &st); err != nil {
		return Placement{}, fmt.Errorf("sysdev: stat %s: %w", abs, err)
	}
	maj, mnr := devNumbers(uint64(st.Dev))
	return r.placement(abs, maj, mnr)
}

// devNumbers splits a dev_t as glibc's gnu_dev_major/minor do.
func devNumbers(dev uint64) (major, minor uint32) {
	major = uint32((dev>>8)&0xfff) | uint32((dev>>32)&^0xfff)
	minor = uint32(dev&0xff) | uint32((dev>>12)&^0xff)
	return major, minor
}

func (r Reader) placement(abs string, maj, mnr uint32) (Placement, error) {
	mm := fmt.Sprintf("%d:%d", maj, mnr)
	p := Placement{Path: abs}
	m, err := r.mountOf(abs, mm)
	if err != nil {
		return Placement{}, err
	}
	p.Mount = m
	if maj == 0 {
		// Anonymous device numbers belong to filesystems without a
		// block device of their own.
		p.Note = fmt.Sprintf("%s filesystem: no block device, I/O priorities do not apply", orUnknown(m.FSType))
		return p, nil
	}
	d, err := r.Device(mm)
	if err != nil {
		p.Note = err.Error()
		return p, nil
	}
	p.Device = &d
	return p, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// mountOf finds the mount of abs: among the mountinfo lines with its device
// number, the one whose mount point is the longest prefix of abs (bind
// mounts repeat a device).
func (r Reader) mountOf(abs, mm string) (Mount, error) {
	f, err := os.Open(filepath.Join(r.proc(), "self", "mountinfo"))
	if err != nil {
		return Mount{}, fmt.Errorf("sysdev: %w", err)
	}
	defer f.Close()
	var best Mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m, dev, ok := parseMountinfo(sc.Text())
		if !ok || dev != mm || !under(abs, m.Point) {
			continue
		}
		if len(m.Point) >= len(best.Point) {
			best = m
		}
	}
	if err := sc.Err(); err != nil {
		return Mount{}, fmt.Errorf("sysdev: read mountinfo: %w", err)
	}
	if best.Point == "" {
		return Mount{}, fmt.Errorf("sysdev: no mount of device %s holds %s", mm, abs)
	}
	return best, nil
}

func under(path, dir string) bool {
	return dir == "/" || path == dir || strings.HasPrefix(path, dir+"/")
}

// parseMountinfo reads one line of /proc/self/mountinfo:
// "id parent maj:min root mountpoint opts [optional...] - fstype source superopts".
func parseMountinfo(line string) (m Mount, dev string, ok bool) {
	fields := strings.Fields(line)
	sep := -1
	for i := 6; i < len(fields); i++ {
		if fields[i] == "-" {
			sep = i
			break
		}
	}
	if len(fields) < 5 || sep < 0 || sep+2 >= len(fields) {
		return Mount{}, "", false
	}
	return Mount{Point: unescape(fields[4]), FSType: fields[sep+1], Source: unescape(fields[sep+2])}, fields[2], true
}

// unescape decodes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Device describes the block device with number mm ("8:1"); for a
// partition, the queue of its whole disk.
func (r Reader) Device(mm string) (Device, error) {
	link := filepath.Join(r.sys(), "dev", "block", mm)
	dir, err := filepath.EvalSymlinks(link)
	if err != nil {
		return Device{}, fmt.Errorf("sysdev: device %s has no entry in %s: %w", mm, filepath.Dir(link), err)
	}
	d := Device{MajorMinor: mm, Name: filepath.Base(dir)}
	if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
		d.Partition = d.Name
		dir = filepath.Dir(dir)
		d.Name = filepath.Base(dir)
	}
	return r.describe(d, dir), nil
}

// Disks lists the whole disks in /sys/block, described.
func (r Reader) Disks() ([]Device, error) {
	entries, err := os.ReadDir(filepath.Join(r.sys(), "block"))
	if err != nil {
		return nil, fmt.Errorf("sysdev: %w", err)
	}
	out := make([]Device, 0, len(entries))
	for _, e := range entries {
		dir, err := filepath.EvalSymlinks(filepath.Join(r.sys(), "block", e.Name()))
		if err != nil {
			continue
		}
		mm, _ := os.ReadFile(filepath.Join(dir, "dev"))
		out = append(out, r.describe(Device{Name: e.Name(), MajorMinor: strings.TrimSpace(string(mm))}, dir))
	}
	return out, nil
}

// describe fills the queue properties of the whole disk at dir.
func (r Reader) describe(d Device, dir string) Device {
	q := filepath.Join(dir, "queue")
	if b, err := os.ReadFile(filepath.Join(q, "rotational")); err == nil {
		d.Rotational = strings.TrimSpace(string(b)) == "1"
		d.Type = "ssd"
		if d.Rotational {
			d.Type = "hdd"
		}
	}
	b, err := os.ReadFile(filepath.Join(q, "scheduler"))
	if err != nil {
		d.Scheduler = "unknown"
		d.PrioritiesNote = fmt.Sprintf("%s has no I/O scheduler queue (device-mapper, md or a virtual device): I/O priorities are not honoured here", d.Name)
		return d
	}
	d.Scheduler, d.Schedulers = ParseScheduler(string(b))
	d.Priorities, d.PrioritiesNote = Honours(d.Name, d.Scheduler, d.Schedulers)
	return d
}

// ParseScheduler reads queue/scheduler ("none [mq-deadline] kyber bfq"):
// the active scheduler (bracketed) and all of them.
func ParseScheduler(s string) (active string, all []string) {
	for _, f := range strings.Fields(s) {
		if strings.HasPrefix(f, "[") && strings.HasSuffix(f, "]") {
			f = strings.Trim(f, "[]")
			active = f
		}
		all = append(all, f)
	}
	if active == "" && len(all) == 1 {
		active = all[0]
	}
	return active, all
}

// Honours reports whether the scheduler applies I/O priorities, with the
// reason in words an operator can act on.
func Honours(dev, active string, available []string) (bool, string) {
	switch active {
	case "bfq", "cfq":
		return true, fmt.Sprintf("%s schedules with %s, which honours I/O priorities", dev, active)
	}
	hint := ""
	for _, s := range available {
		if s == "bfq" {
			hint = fmt.Sprintf("; `echo bfq > /sys/block/%s/queue/scheduler` would enable them", dev)
		}
	}
	if active == "" {
		active = "an unknown scheduler"
	}
	return false, fmt.Sprintf("%s schedules with %s, which ignores I/O priorities: Facet does not set them%s", dev, active, hint)
}

// DiskIO is what a block device has moved since boot, from /proc/diskstats
// (sectors of 512 bytes whatever the device's own sector size).
type DiskIO struct {
	Read, Written uint64 // bytes
}

// DiskIO returns the bytes read and written so far by the device named
// name ("vda", "sda1").
func (r Reader) DiskIO(name string) (DiskIO, error) {
	b, err := os.ReadFile(filepath.Join(r.proc(), "diskstats"))
	if err != nil {
		return DiskIO{}, fmt.Errorf("sysdev: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		// major minor name reads merged sectors-read ms writes merged sectors-written ...
		f := strings.Fields(line)
		if len(f) < 10 || f[2] != name {
			continue
		}
		rd, err1 := strconv.ParseUint(f[5], 10, 64)
		wr, err2 := strconv.ParseUint(f[9], 10, 64)
		if err1 != nil || err2 != nil {
			return DiskIO{}, fmt.Errorf("sysdev: diskstats line of %s: %q", name, strings.TrimSpace(line))
		}
		return DiskIO{Read: rd * 512, Written: wr * 512}, nil
	}
	return DiskIO{}, fmt.Errorf("sysdev: %s is not in %s", name, filepath.Join(r.proc(), "diskstats"))
}
