package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The documentation's commands are run, not just read: every fenced shell
// block (```sh, ```bash, ```console, ```shell) of README.md and docs/**/*.md
// runs against a real `facet serve` started for its file, in the file's
// order (a tenant is created before a policy names it), with the test's
// addresses, token and keys put in for the documented ones. A block that
// cannot run here says so in the markdown, on the line before its fence:
//
//	<!-- not-run: a fleet on other hosts -->
//
// and is skipped by name with that reason. A marker without a reason, or one
// that precedes no shell block, fails the test, so nothing is skipped
// silently and no stale marker stays behind.

// docBlock is one fenced shell block of a markdown file.
type docBlock struct {
	file   string // relative to the repository root
	line   int    // the fence's line, 1-based
	text   string
	notRun string // the reason given by a not-run marker; "" when it runs
}

var (
	fenceRE  = regexp.MustCompile("^\\s*(```+|~~~+)\\s*([A-Za-z0-9_+-]*)(.*)$")
	notRunRE = regexp.MustCompile(`^\s*<!--\s*not-run\s*:?(.*?)-->\s*$`)
	// commandLineRE is the first line of a block that is commands: a
	// prompt, or a call of facet or of a tool the documents use.
	commandLineRE = regexp.MustCompile(`^\s*(\$ |facet |make |aws |curl |qemu-|nbd)`)
)

// shellLangs are the fence languages whose blocks are commands to run.
var shellLangs = map[string]bool{"sh": true, "bash": true, "console": true, "shell": true}

// parseDocBlocks returns the shell blocks of one markdown file and the
// problems with its not-run markers.
func parseDocBlocks(rel string, src []byte) ([]docBlock, []string) {
	var (
		blocks   []docBlock
		problems []string
		pending  string // reason of a not-run marker waiting for its block
		pendLine int
		inFence  string // the open fence's marker, "" outside a fence
		cur      *docBlock
		body     []string
		untagged int // the line of an open fence without a language, until its first line is seen
	)
	sc := bufio.NewScanner(strings.NewReader(string(src)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if inFence != "" {
			if strings.HasPrefix(strings.TrimSpace(line), inFence) && strings.Trim(strings.TrimSpace(line), inFence[:1]) == "" {
				inFence, untagged = "", 0
				if cur != nil {
					cur.text = strings.Join(body, "\n") + "\n"
					blocks = append(blocks, *cur)
					cur, body = nil, nil
				}
				continue
			}
			if cur != nil {
				body = append(body, line)
			}
			// A fence without a language that holds commands would
			// escape the test: it must say it is shell.
			if untagged != 0 && strings.TrimSpace(line) != "" {
				if commandLineRE.MatchString(line) {
					problems = append(problems, fmt.Sprintf("%s:%d: a fence without a language holds commands: mark it ```sh", rel, untagged))
				}
				untagged = 0
			}
			continue
		}
		if m := notRunRE.FindStringSubmatch(line); m != nil {
			if pending != "" || pendLine != 0 {
				problems = append(problems, fmt.Sprintf("%s:%d: not-run marker precedes no shell block", rel, pendLine))
			}
			pending, pendLine = strings.TrimSpace(m[1]), n
			if pending == "" {
				problems = append(problems, fmt.Sprintf("%s:%d: not-run marker without a reason", rel, n))
				pending = "(no reason given)"
			}
			continue
		}
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			inFence = m[1]
			lang := strings.ToLower(m[2])
			if lang == "" {
				untagged = n
			}
			if shellLangs[lang] {
				cur = &docBlock{file: rel, line: n, notRun: pending}
				if info := strings.TrimSpace(m[3]); strings.HasPrefix(info, "no-run") && cur.notRun == "" {
					problems = append(problems, fmt.Sprintf("%s:%d: %q: give the reason in a <!-- not-run: why --> line before the fence", rel, n, info))
					cur.notRun = "(no reason given)"
				}
			} else if pendLine != 0 {
				problems = append(problems, fmt.Sprintf("%s:%d: not-run marker precedes a %q block, not a shell one", rel, pendLine, lang))
			}
			pending, pendLine = "", 0
			continue
		}
		if strings.TrimSpace(line) != "" && pendLine != 0 {
			problems = append(problems, fmt.Sprintf("%s:%d: not-run marker precedes no shell block", rel, pendLine))
			pending, pendLine = "", 0
		}
	}
	if pendLine != 0 {
		problems = append(problems, fmt.Sprintf("%s:%d: not-run marker precedes no shell block", rel, pendLine))
	}
	return blocks, problems
}

func TestDocBlocksParse(t *testing.T) {
	src := "# t\n```sh\necho a\n```\n<!-- not-run: needs a fleet -->\n```bash\nfacet gateway\n```\n" +
		"```go\nx := 1\n```\n<!-- not-run: -->\n```console\nls\n```\n<!-- not-run: stale -->\ntext\n```sh no-run\nls\n```\n```\nfacet ctl bw\n```\n```\n+---+\n```\n"
	blocks, problems := parseDocBlocks("x.md", []byte(src))
	if len(blocks) != 4 {
		t.Fatalf("blocks = %+v", blocks)
	}
	if blocks[0].line != 2 || blocks[0].text != "echo a\n" || blocks[0].notRun != "" {
		t.Errorf("block 0 = %+v", blocks[0])
	}
	if blocks[1].notRun != "needs a fleet" || blocks[1].text != "facet gateway\n" {
		t.Errorf("block 1 = %+v", blocks[1])
	}
	want := []string{"x.md:12: not-run marker without a reason", "x.md:16: not-run marker precedes no shell block",
		`x.md:18: "no-run": give the reason in a <!-- not-run: why --> line before the fence`,
		"x.md:21: a fence without a language holds commands: mark it ```sh"}
	if strings.Join(problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
}

// docFiles returns README.md and every markdown file under docs/, relative
// to root.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// docTools are the programs other than facet that documented commands call;
// a block calling one that is not installed is skipped, saying which.
var docTools = []string{"aws", "qemu-img", "qemu-io", "nbdinfo", "nbdcopy", "jq", "rustc", "make", "go"}

func TestDocsCommands(t *testing.T) {
	if gatewayTarget() {
		t.Skip("the documented commands run against facet serve")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// `facet` in the documents is the binary under test.
	binDir := t.TempDir()
	if err := os.Symlink(facetBin, filepath.Join(binDir, "facet")); err != nil {
		t.Fatal(err)
	}
	var problems []string
	perFile := map[string][]docBlock{}
	files := docFiles(t, root)
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		blocks, p := parseDocBlocks(f, src)
		problems = append(problems, p...)
		perFile[f] = blocks
	}
	for _, p := range problems {
		t.Error(p)
	}
	for _, f := range files {
		blocks := perFile[f]
		if len(blocks) == 0 {
			continue
		}
		t.Run(strings.ReplaceAll(f, "/", "_"), func(t *testing.T) {
			runDocFile(t, root, binDir, blocks)
		})
	}
}

// runDocFile runs one file's blocks in order against a fresh server.
func runDocFile(t *testing.T, root, binDir string, blocks []docBlock) {
	runnable := false
	for _, b := range blocks {
		runnable = runnable || b.notRun == ""
	}
	if !runnable {
		for _, b := range blocks {
			t.Logf("not run: %s:%d: %s", b.file, b.line, b.notRun)
		}
		return
	}
	nbdAddr := freeAddr(t)
	s := &server{t: t, dataDir: t.TempDir(), s3Addr: freeAddr(t), adminAddr: freeAddr(t), token: "e2e-admin-" + randHex(16), done: make(chan struct{})}
	if err := s.launch([]string{"serve", "--data", s.dataDir, "--s3-addr", s.s3Addr, "--admin-addr", s.adminAddr,
		"--admin-token", s.token, "--nbd-addr", nbdAddr, "--audit-log", filepath.Join(t.TempDir(), "audit.log")}, nil); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	// Paths the documents use relative to the repository root resolve in
	// the working directory, whose own files (keys, images) stay in a
	// temporary directory.
	for _, name := range []string{"examples", "bin"} {
		if err := os.MkdirAll(filepath.Join(root, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(root, name), filepath.Join(work, name)); err != nil {
			t.Fatal(err)
		}
	}
	_, nbdPort, err := net.SplitHostPort(nbdAddr)
	if err != nil {
		t.Fatal(err)
	}
	subst := []string{
		"http://127.0.0.1:9001", "http://" + s.adminAddr,
		"127.0.0.1:9001", s.adminAddr,
		"127.0.0.1:9000", s.s3Addr,
		"127.0.0.1:10809", nbdAddr,
		"@host:10809", "@" + nbdAddr,
		"host=host,port=10809", "host=127.0.0.1,port=" + nbdPort,
		"--token T ", "--token " + s.token + " ",
		"FACET_ADMIN_TOKEN=T ", "FACET_ADMIN_TOKEN=" + s.token + " ",
		"/srv/", work + "/srv/",
	}
	env := append(os.Environ(),
		"PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"FACET_ADMIN=http://"+s.adminAddr,
		"FACET_ADMIN_TOKEN="+s.token,
	)
	state := shellQuote(filepath.Join(t.TempDir(), "env.sh"))
	for _, b := range blocks {
		name := fmt.Sprintf("line%d", b.line)
		t.Run(name, func(t *testing.T) {
			if b.notRun != "" {
				t.Skipf("not run: %s:%d: %s", b.file, b.line, b.notRun)
			}
			for _, tool := range docTools {
				if regexp.MustCompile(`(^|[\s|;(])` + regexp.QuoteMeta(tool) + `\s`).MatchString(b.text) {
					if _, err := exec.LookPath(tool); err != nil {
						t.Skipf("not run: %s:%d needs %s, which is not installed", b.file, b.line, tool)
					}
				}
			}
			script := strings.NewReplacer(subst...).Replace(b.text)
			// `make` targets are the repository's.
			script = regexp.MustCompile(`(?m)^make `).ReplaceAllString(script, "make -C "+shellQuote(root)+" ")
			if strings.Contains(script, "_KEY=...") || strings.Contains(script, "_KEY_ID=...") {
				c := docTenantKey(t, s)
				script = strings.NewReplacer(
					"FACET_ACCESS_KEY=...", "FACET_ACCESS_KEY="+c.AccessKey, "FACET_SECRET_KEY=...", "FACET_SECRET_KEY="+c.SecretKey,
					"AWS_ACCESS_KEY_ID=...", "AWS_ACCESS_KEY_ID="+c.AccessKey, "AWS_SECRET_ACCESS_KEY=...", "AWS_SECRET_ACCESS_KEY="+c.SecretKey,
				).Replace(script)
			}
			// The blocks of a file are one terminal session: what a block
			// exports, the next one has.
			script = "if [ -f " + state + " ]; then . " + state + "; fi\n" + script + "export -p > " + state + "\n"
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-e", "-u", "-o", "pipefail", "-c", script)
			cmd.Dir, cmd.Env = work, env
			// A block's own children (a server it started in the
			// background) end with it: the whole process group is killed
			// when the block ends or times out.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			cmd.WaitDelay = 5 * time.Second
			var buf bytes.Buffer
			cmd.Stdout, cmd.Stderr = &buf, &buf
			err := cmd.Start()
			if err == nil {
				err = cmd.Wait()
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
			out := buf.Bytes()
			if err != nil {
				t.Fatalf("%s:%d: %v\nscript:\n%s\noutput:\n%s\nserver log:\n%s", b.file, b.line, err, script, out, s.logTail(20))
			}
		})
	}
}

// docTenantKey makes a new access key of the documents' tenant, acme, for
// the commands that act as the tenant.
func docTenantKey(t *testing.T, s *server) creds {
	t.Helper()
	out, err := s.ctl(t, "key", "create", "acme", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var c creds
	if err := json.Unmarshal(out, &c); err != nil || c.AccessKey == "" || c.SecretKey == "" {
		t.Fatalf("key create: %v %s", err, out)
	}
	return c
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
