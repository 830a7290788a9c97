package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's chromium, installed by scripts/ensure-deps.sh.
const chromiumPath = "/usr/bin/chromium"

// uiArtifacts is where the dashboard test leaves its screenshots
// (gitignored): FACET_UI_ARTIFACTS, or test/e2e/artifacts/ui.
func uiArtifacts(t *testing.T) string {
	dir := os.Getenv("FACET_UI_ARTIFACTS")
	if dir == "" {
		abs, err := filepath.Abs(filepath.Join("artifacts", "ui"))
		if err != nil {
			t.Fatal(err)
		}
		dir = abs
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The dashboard in headless Chromium, end to end against a real facet
// serve: sign in as admin; create a tenant (its secret shown once); type a
// policy with a typo and see the compiler's error inline, fix it and see
// it listed active; run a short `facet bench` load and see the tenant's
// plot move and its dynamic policy's trigger marked; sign in as that
// tenant and see nothing of another tenant; CSRF and cookie flags;
// screenshots of every page at 1280 px and some at 390 px.
func TestDashboardInChromium(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("chromium is required (scripts/ensure-deps.sh installs Debian's chromium): %v", err)
	}
	// A configured capacity, so that the bandwidth controller assigns
	// shares: the SLO plot draws acme's fair share. A port of its own for
	// the block stage (the Volumes page), not NBD's default one.
	s := startServerEnv(t, t.TempDir(), "e2e-admin-"+randHex(16), []string{"FACET_QOS_CAPACITY=80MB/s", "FACET_NBD_ADDR=" + freeAddr(t)})
	base := "http://" + s.adminAddr
	other := s.createTenant(t, "zeta-corp")
	if _, err := s.ctl(t, "policy", "add", "FOR TENANT zeta-corp DO SET compression WITH engine=gzip"); err != nil {
		t.Fatal(err)
	}
	shots := uiArtifacts(t)
	t.Logf("dashboard screenshots: %s", shots)

	// The response headers of the page itself: a strict CSP, no framing.
	resp, err := http.Get(base + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	if resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("X-Frame-Options %q", resp.Header.Get("X-Frame-Options"))
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath), chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.DisableGPU)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancelTab()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()

	// Script errors, console errors and CSP violations fail the test.
	var pageErrs struct {
		sync.Mutex
		list []string
	}
	note := func(msg string) {
		pageErrs.Lock()
		pageErrs.list = append(pageErrs.list, msg)
		pageErrs.Unlock()
	}
	if err := chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg := e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
			note(msg)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				msg := "console.error:"
				for _, a := range e.Args {
					msg += " " + string(a.Value) + a.Description
				}
				note(msg)
			}
		case *cdplog.EventEntryAdded:
			// The browser reports CSP violations and failed loads here;
			// refused requests that the test makes on purpose are 403s.
			if e.Entry.Level == cdplog.EntryLevelError && !expectedRefusal(e.Entry) {
				note(string(e.Entry.Source) + ": " + e.Entry.Text + " " + e.Entry.URL)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return v
	}
	shot := func(name string) {
		t.Helper()
		run("settle", chromedp.Sleep(300*time.Millisecond))
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	page := func(hash, ready string) {
		t.Helper()
		run("open "+hash, chromedp.Navigate(base+"/ui/"+hash), chromedp.WaitVisible(ready))
	}
	poll := func(what, expr string) {
		t.Helper()
		ok, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(40*time.Second), chromedp.WithPollingInterval(200*time.Millisecond)))
		if err != nil || !ok {
			body, _ := chromedp.Run(ctx, chromedp.Text("body"))
			t.Fatalf("%s: %v; page:\n%s", what, err, body)
		}
	}

	// fits: the page is no wider than the window, and no table cell with
	// a sentence in it is squeezed to a word a line.
	fits := func(where string) {
		t.Helper()
		if w := evalJS[[]int](t, ctx, `[document.documentElement.scrollWidth, window.innerWidth]`); w[0] > w[1] {
			t.Errorf("%s is %d px wide in a %d px window", where, w[0], w[1])
		}
		if narrow := evalJS[[]string](t, ctx, squeezedCells); len(narrow) > 0 {
			t.Errorf("%s: table cells squeezed narrow: %q", where, narrow)
		}
	}
	// labelled: every visible control has an accessible name.
	labelled := func(where string) {
		t.Helper()
		if bad := evalJS[[]string](t, ctx, unlabelledControls); len(bad) > 0 {
			t.Errorf("%s: controls without a label: %v", where, bad)
		}
		if dup := evalJS[[]string](t, ctx, sameNamedDangerButtons); len(dup) > 0 {
			t.Errorf("%s: destructive buttons that do not say what they act on: %v", where, dup)
		}
	}

	// The sign-in card shows the fields of the chosen mode only: the token
	// for the administrator, the access key and secret for a tenant.
	run("open the sign-in card", chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible("#login-token"))
	signInFields := func(mode string, want map[string]bool) {
		t.Helper()
		got := evalJS[map[string]bool](t, ctx, loginFieldsShown)
		for id, shown := range want {
			if got[id] != shown {
				t.Errorf("%s sign-in: #%s shown=%v, want %v (all: %v)", mode, id, got[id], shown, got)
			}
		}
	}
	signInFields("administrator", map[string]bool{"login-token": true, "login-access-key": false, "login-secret-key": false})
	run("choose tenant sign-in", chromedp.Click("#mode-tenant"), chromedp.WaitVisible("#login-access-key"))
	signInFields("tenant", map[string]bool{"login-token": false, "login-access-key": true, "login-secret-key": true})
	run("choose admin sign-in", chromedp.Click("#mode-admin"), chromedp.WaitVisible("#login-token"))
	signInFields("administrator", map[string]bool{"login-token": true, "login-access-key": false, "login-secret-key": false})

	// Sign in as the admin.
	run("sign in as admin",
		chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible("#login-token"),
		chromedp.SendKeys("#login-token", s.token), chromedp.Click("#login-submit"),
		chromedp.WaitVisible(`section[data-page="overview"]`))

	// The session cookie: HttpOnly, SameSite=Strict, not Secure over plain
	// HTTP, and not the admin token.
	got, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/ui/"}})
	if err != nil {
		t.Fatal(err)
	}
	var sessionCookie *network.Cookie
	for _, c := range got.Cookies {
		if c.Name == "facet_session" {
			sessionCookie = c
		}
	}
	if sessionCookie == nil {
		t.Fatalf("no session cookie among %d", len(got.Cookies))
	}
	if !sessionCookie.HTTPOnly || sessionCookie.SameSite != network.CookieSameSiteStrict || sessionCookie.Secure || sessionCookie.Path != "/ui/" {
		t.Errorf("session cookie flags: HttpOnly=%v SameSite=%q Secure=%v Path=%q", sessionCookie.HTTPOnly, sessionCookie.SameSite, sessionCookie.Secure, sessionCookie.Path)
	}
	if strings.Contains(sessionCookie.Value, s.token) {
		t.Error("the session cookie holds the admin token")
	}
	if evalJS[bool](t, ctx, `document.cookie.includes("facet_session")`) {
		t.Error("scripts can read the session cookie")
	}

	// CSRF: a change without the token is refused, from the browser (the
	// cookie goes along) and from a client that stole the cookie.
	status := evalJS[int](t, ctx, `fetch("api/v1/tenants", {method: "POST", headers: {"Content-Type": "application/json"}, body: '{"name":"csrf-victim"}'}).then(r => r.status)`)
	if status != http.StatusForbidden {
		t.Errorf("POST without the CSRF header: %d, want 403", status)
	}
	checkCSRF(t, base, sessionCookie.Value)
	if out, _ := s.ctl(t, "tenant", "list"); strings.Contains(string(out), "csrf-victim") {
		t.Error("a request without the CSRF token created a tenant")
	}

	// Overview at both widths.
	page("#/overview", `svg[data-plot="aggregate-bw"]`)
	shot("overview-1280")

	// Create a tenant; the secret is shown once.
	page("#/tenants", "#tenant-name")
	run("create tenant",
		chromedp.SendKeys("#tenant-name", "acme"), chromedp.Click("#tenant-create-submit"),
		chromedp.WaitVisible("#new-secret-key"), chromedp.WaitVisible(`tr[data-tenant="acme"]`))
	ak, sk := text("#new-access-key"), text("#new-secret-key")
	if ak == "" || sk == "" {
		t.Fatalf("credentials not shown: %q %q", ak, sk)
	}
	shot("tenants-created")
	page("#/overview", `svg[data-plot="aggregate-bw"]`)
	page("#/tenants", `tr[data-tenant="acme"]`)
	if strings.Contains(text("body"), sk) {
		t.Error("the secret key is shown again after its creation")
	}
	shot("tenants")
	// A second key for acme: its secret shown once, then revoked. The
	// tenant's page shows its quota and usage.
	page("#/tenants/acme", "#key-create")
	poll("quota card", `!!document.querySelector('table[aria-label="Quota"]')`)
	run("create a key", chromedp.Click("#key-create"), chromedp.WaitVisible("#new-secret-key"))
	ak2, sk2 := text("#new-access-key"), text("#new-secret-key")
	if ak2 == "" || sk2 == "" || ak2 == ak {
		t.Fatalf("second key not shown: %q %q", ak2, sk2)
	}
	poll("both keys listed", fmt.Sprintf(`!!document.querySelector('tr[data-key=%q]') && !!document.querySelector('tr[data-key=%q]')`, ak, ak2))
	page("#/tenants", `tr[data-tenant="acme"]`)
	page("#/tenants/acme", fmt.Sprintf(`tr[data-key=%q]`, ak2))
	if strings.Contains(text("body"), sk2) {
		t.Error("the second secret key is shown again after its creation")
	}
	// Destructive buttons ask once more before they act.
	revoke := fmt.Sprintf(`tr[data-key=%q] button.danger`, ak2)
	run("revoke the key", chromedp.Click(revoke), chromedp.WaitVisible(revoke+".armed"), chromedp.Click(revoke))
	poll("key revoked", fmt.Sprintf(`!document.querySelector('tr[data-key=%q]') && !!document.querySelector('tr[data-key=%q]')`, ak2, ak))
	if out, err := s.ctl(t, "key", "list", "acme"); err != nil || strings.Contains(string(out), ak2) || !strings.Contains(string(out), ak) {
		t.Errorf("acme's keys after the revocation: %v\n%s", err, out)
	}
	// Delete a tenant from the list.
	s.createTenant(t, "doomed")
	page("#/tenants", `tr[data-tenant="doomed"]`)
	del := `tr[data-tenant="doomed"] button.danger`
	run("delete a tenant", chromedp.Click(del), chromedp.WaitVisible(del+".armed"), chromedp.Click(del))
	poll("tenant deleted", `!document.querySelector('tr[data-tenant="doomed"]') && !!document.querySelector('tr[data-tenant="acme"]')`)
	if out, err := s.ctl(t, "tenant", "list"); err != nil || strings.Contains(string(out), "doomed") {
		t.Errorf("tenants after the deletion: %v\n%s", err, out)
	}

	// A policy with a typo: the compiler's error inline, with a caret.
	page("#/policies", "#policy-text")
	run("type a typo", chromedp.SendKeys("#policy-text", "FOR TENANT acme DO SET compresion WITH engine=zstd"))
	poll("inline error", `(() => { const d = document.querySelector("#policy-diagnostics"); return !!d && !!d.querySelector("pre") && d.textContent.includes("line 1:24") && d.textContent.includes("compression"); })()`)
	diag := text("#policy-diagnostics")
	if !strings.Contains(diag, "^") || !strings.Contains(diag, "compresion") {
		t.Errorf("inline error without caret or source: %q", diag)
	}
	if !evalJS[bool](t, ctx, `document.querySelector("#policy-apply").disabled`) {
		t.Error("Apply is enabled for an invalid policy")
	}
	shot("policies-error")
	// Fix it: the error goes, Apply stores it, the list shows it active.
	clearEditor := func() {
		evalJS[bool](t, ctx, `(() => { document.querySelector("#policy-text").value = ""; return true; })()`)
	}
	clearEditor()
	run("fix the typo", chromedp.SendKeys("#policy-text", "FOR TENANT acme DO SET compression WITH engine=zstd"))
	poll("valid", `!!document.querySelector("#policy-valid") && !document.querySelector("#policy-apply").disabled`)
	run("apply", chromedp.Click("#policy-apply"))
	poll("listed active", `[...document.querySelectorAll('tr[data-show="static"]')].some(r => r.textContent.includes("FOR TENANT acme DO SET compression") && r.textContent.includes("active"))`)
	// A dynamic policy: armed until acme writes more than 3 objects a second.
	clearEditor()
	run("dynamic policy", chromedp.SendKeys("#policy-text", "burst: FOR TENANT acme WHEN put_ops > 3 DO SET noop TRANSIENT"))
	poll("valid dynamic", `!!document.querySelector("#policy-valid") && !document.querySelector("#policy-apply").disabled`)
	run("apply dynamic", chromedp.Click("#policy-apply"))
	poll("listed armed", `[...document.querySelectorAll('tr[data-show="armed"]')].some(r => r.textContent.includes("burst"))`)
	shot("policies")

	// An SLO for acme: listed, and its reservation drawn on acme's plot.
	page("#/slos", "#slo-form")
	run("set an SLO",
		chromedp.SetValue(`#slo-form select[name="tenant"]`, "acme"),
		chromedp.SendKeys(`#slo-form input[name="reservation"]`, "2"),
		chromedp.SendKeys(`#slo-form input[name="weight"]`, "2"),
		chromedp.Click(`#slo-form button[type="submit"]`))
	poll("SLO listed and drawn", `!!document.querySelector('tr[data-slo="acme"]') && !!document.querySelector('svg[data-plot="slo-acme"] line[data-ref="reservation"]')`)
	if r := text(`tr[data-slo="acme"]`); !strings.Contains(r, "2.00 MB/s") {
		t.Errorf("acme's SLO row: %q", r)
	}

	// A short bench load moves acme's plot, and the trigger is marked.
	page("#/tenants/acme", `svg[data-plot="tenant-ops-acme"]`)
	done := startUIBenchLoad(t, s, ak, sk)
	poll("plot moves", `Number((document.querySelector('svg[data-plot="tenant-ops-acme"] path[data-name="PUT"]') || {dataset: {}}).dataset.max || 0) > 0`)
	// Under load the SLO plot shows what acme is served against its
	// reservation and the fair share the bandwidth controller assigns it.
	page("#/slos", `svg[data-plot="slo-acme"]`)
	poll("served against reservation and fair share", `(() => {
		const svg = document.querySelector('svg[data-plot="slo-acme"]');
		return !!svg && Number((svg.querySelector('path[data-name="served"]') || {dataset: {}}).dataset.max || 0) > 0 &&
			!!svg.querySelector('line[data-ref="reservation"]') && Number((svg.querySelector('line[data-ref="fair share"]') || {dataset: {}}).dataset.value || 0) > 0;
	})()`)
	shot("slos-live")
	page("#/tenants/acme", `svg[data-plot="tenant-ops-acme"]`)
	poll("trigger marked", `!!document.querySelector('svg[data-plot="tenant-ops-acme"] g.marker[data-policy]')`)
	shot("tenant-acme-live")
	page("#/overview", `svg[data-plot="aggregate-bw"]`)
	poll("busiest tenants", `[...document.querySelectorAll("a")].some(a => a.textContent === "acme")`)
	shot("overview-load")
	page("#/policies", `tr[data-show]`)
	poll("triggered", `[...document.querySelectorAll('tr[data-show="triggered"]')].some(r => r.textContent.includes("put_ops="))`)
	shot("policies-triggered")
	// Explain acme's pipeline: the static policy's compression, from p2's level.
	run("explain", chromedp.SendKeys(`#explain-form input[name="tenant"]`, "acme"), chromedp.Click(`#explain-form button[type="submit"]`))
	poll("explained", `[...document.querySelectorAll("#explain-form + div td code")].some(c => c.textContent === "compression")`)
	shot("policies-explain")
	// For one object of a bucket with its own policy: that one's filter too.
	acme := s.sdk(creds{Tenant: "acme", AccessKey: ak, SecretKey: sk})
	mkBucket(t, acme, "acme-docs")
	if _, err := s.ctl(t, "policy", "add", "FOR BUCKET acme/acme-docs DO SET noop"); err != nil {
		t.Fatal(err)
	}
	run("explain an object",
		chromedp.SendKeys(`#explain-form input[name="bucket"]`, "acme-docs"), chromedp.SendKeys(`#explain-form input[name="key"]`, "report.txt"),
		chromedp.Click(`#explain-form button[type="submit"]`))
	poll("object explained", `(() => {
		const rows = [...document.querySelectorAll("#explain-form + div tr")].map(r => r.textContent);
		return rows.some(r => r.startsWith("noop") && r.includes("acme/acme-docs")) && rows.some(r => r.startsWith("compression"));
	})()`)
	shot("policies-explain-object")
	// The keyboard alone: Tab to a section link and Enter opens it.
	evalJS[bool](t, ctx, `(() => { document.querySelector('nav a[data-page="controllers"]').focus(); return true; })()`)
	run("keyboard", chromedp.KeyEvent("\r"), chromedp.WaitVisible(`section[data-page="controllers"] h1`))
	run("keyboard tab", chromedp.KeyEvent("\t"))
	if focused := evalJS[string](t, ctx, `document.activeElement ? document.activeElement.tagName + " " + (document.activeElement.textContent || "").trim() : ""`); focused == "" || focused == "BODY " {
		t.Errorf("Tab after a page change focuses nothing: %q", focused)
	}
	// At 390 px every page fits the width (wide tables scroll inside
	// their own box), and every control has a label.
	run("390 px", chromedp.EmulateViewport(390, 844))
	for _, p := range adminPages {
		page(p.hash, p.ready)
		fits(p.hash)
		labelled(p.hash)
		shot(p.name + "-390")
	}
	run("1280 px", chromedp.EmulateViewport(1280, 900))
	// Upload a WebAssembly filter with a dependency file.
	wasmDir := t.TempDir()
	module, dep := filepath.Join(wasmDir, "noop.wasm"), filepath.Join(wasmDir, "words.txt")
	build := exec.Command("go", "build", "-o", module, "./examples/filters/noop")
	build.Dir, build.Env = repoRoot(t), append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the noop example: %v\n%s", err, out)
	}
	if err := os.WriteFile(dep, []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	page("#/filters", "#filter-upload")
	run("upload a filter",
		chromedp.SendKeys(`#filter-upload input[name="name"]`, "uinoop"),
		chromedp.SetUploadFiles(`#filter-upload input[name="module"]`, []string{module}),
		chromedp.SetUploadFiles(`#filter-upload input[name="dependencies"]`, []string{dep}),
		chromedp.Click("#filter-upload-submit"))
	poll("filter registered", `!!document.querySelector('tr[data-filter="uinoop"]') && !!document.querySelector('tr[data-dependency="words-txt"]')`)
	shot("filters")
	if out, err := s.ctl(t, "filter", "list"); err != nil || !strings.Contains(string(out), "uinoop") {
		t.Errorf("facet ctl filter list does not show the uploaded filter: %v\n%s", err, out)
	}
	// A pool and a volume of acme's: the Volumes page shows the placement
	// and the reservation against the pool's capacity.
	if _, err := s.ctl(t, "pool", "create", "ssd", "--dir", filepath.Join(t.TempDir(), "pool-ssd"), "--capacity", "1GiB", "--usage", "best-effort"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ctl(t, "volume", "create", "acme-vol", "--tenant", "acme", "--size", "64MiB", "--class", "best-effort"); err != nil {
		t.Fatal(err)
	}
	page("#/volumes", `tr[data-pool="ssd"]`)
	poll("volume placed", `(() => {
		const v = document.querySelector('tr[data-volume="acme-vol"]'), p = document.querySelector('tr[data-pool="ssd"]');
		return !!v && !!p && v.textContent.includes("acme") && v.textContent.includes("ssd: ") && p.textContent.includes("acme-vol");
	})()`)
	for _, p := range adminPages {
		page(p.hash, p.ready)
		labelled(p.hash)
		shot(p.name)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The nodes page shows each node's storage devices as the QoS view
	// (/v1/bw) reports them.
	page("#/nodes", `tr[data-cache-node]`)
	poll("device rows", `!!document.querySelector('section[data-page="nodes"] tr[data-device]')`)
	// Once the load has stopped, the transient policy switches itself off;
	// its row says that its trigger does not hold, in the Controllers
	// page's words, rather than printing the comparison as if it held.
	page("#/policies", `tr[data-show]`)
	burstOff := `[...document.querySelectorAll('tr[data-show="armed"]')].find(r => r.textContent.includes("burst") && r.textContent.includes("switched off"))`
	poll("switched off", "!!"+burstOff)
	if row := evalJS[string](t, ctx, burstOff+".textContent"); !strings.Contains(row, "does not hold: put_ops=") || strings.Contains(row, "(put_ops") {
		t.Errorf("the switched-off policy's row: %q, want \"does not hold: put_ops=…\"", row)
	}
	// Trigger labels never overlap: not on acme's plot, nor on a plot of
	// six triggers within ten seconds.
	page("#/tenants/acme", `svg[data-plot="tenant-ops-acme"]`)
	poll("on and off marked", `document.querySelectorAll('svg[data-plot="tenant-ops-acme"] g.marker').length >= 2`)
	if bad := evalJS[[]string](t, ctx, `(`+markerLabelOverlaps+`)(document.querySelector('svg[data-plot="tenant-ops-acme"]'))`); len(bad) > 0 {
		t.Errorf("acme's plot: trigger labels overlap: %v", bad)
	}
	burst := evalJS[map[string]any](t, ctx, `(async () => {
		const { timePlot } = await import("./plot.js");
		const now = Date.now(), markers = [];
		for (let i = 0; i < 6; i++) markers.push({ t: now - 60000 + i * 1500, kind: i % 2 ? "off" : "on", policy: "p2", label: "p2 " + i, short: i % 2 ? "p2 off" : "p2 on" });
		const fig = timePlot({ id: "burst-check", title: "burst", unit: "ops/s", windowMs: 300000, now, series: [], markers, width: 720 });
		document.body.append(fig);
		const out = { overlaps: (`+markerLabelOverlaps+`)(fig.querySelector("svg")),
			lines: fig.querySelectorAll("g.marker line").length, labels: fig.querySelectorAll("g.marker text").length };
		fig.remove();
		return out;
	})()`)
	if fmt.Sprint(burst["overlaps"]) != "[]" || burst["lines"] != float64(6) || burst["labels"].(float64) < 2 {
		t.Errorf("six close triggers: %v, want no overlapping labels, six lines and at least two labels", burst)
	}
	// What compression saved: acme's static policy compresses, so a
	// repetitive object shows as far fewer stored bytes than written.
	putBytes(t, acme, "acme-docs", "repetitive.txt", bytes.Repeat([]byte("the same line, over and over again\n"), 30000))
	page("#/tenants", `tr[data-tenant="acme"]`)
	poll("stored vs logical", `(() => {
		const cells = [...document.querySelectorAll('tr[data-tenant="acme"] td.num')].map(td => td.textContent);
		return cells.length === 4 && cells[3].endsWith(" %") && parseFloat(cells[3]) > 50;
	})()`)
	shot("tenants-usage")
	page("#/overview", `svg[data-plot="aggregate-bw"]`)

	// Sign in as the tenant: nothing of zeta-corp anywhere.
	run("sign out", chromedp.Click("#signout"), chromedp.WaitVisible("#login-token"))
	run("sign in as tenant",
		chromedp.Click("#mode-tenant"), chromedp.WaitVisible("#login-access-key"),
		chromedp.SendKeys("#login-access-key", ak), chromedp.SendKeys("#login-secret-key", sk),
		chromedp.Click("#login-submit"), chromedp.WaitVisible(`section[data-page="overview"]`))
	for _, p := range []struct{ hash, ready, name string }{
		{"#/overview", `svg[data-plot="tenant-bw-acme"]`, "tenant-overview"},
		{"#/tenants", `svg[data-plot="tenant-ops-acme"]`, "tenant-self"},
		{"#/policies", `tr[data-policy]`, "tenant-policies"},
		{"#/slos", `section[data-page="slos"] h1`, "tenant-slos"},
		{"#/filters", `section[data-page="overview"]`, "tenant-no-filters"},
	} {
		page(p.hash, p.ready)
		run("settle "+p.hash, chromedp.Sleep(500*time.Millisecond))
		body := text("body")
		if strings.Contains(body, "zeta") || strings.Contains(body, other.AccessKey) {
			t.Errorf("tenant acme sees zeta-corp on %s:\n%s", p.hash, body)
		}
		labelled(p.hash)
		shot(p.name)
	}
	if visibleAdminLinks := evalJS[int](t, ctx, `[...document.querySelectorAll("nav a[data-admin]")].filter(a => a.offsetParent !== null).length`); visibleAdminLinks != 0 {
		t.Errorf("a tenant sees %d admin-only sections", visibleAdminLinks)
	}
	// The server enforces the scope, whatever the page asks.
	answers := evalJS[map[string]any](t, ctx, `(async () => {
		const st = async (p) => (await fetch(p)).status;
		const tenants = await (await fetch("api/v1/tenants")).json();
		const pol = await (await fetch("api/policies")).json();
		const raw = await (await fetch("api/v1/metrics/put_ops")).text();
		return {
			other: await st("api/v1/tenants/zeta-corp"),
			otherUsage: await st("api/v1/tenants/zeta-corp/usage"),
			controllers: await st("api/v1/controllers"),
			explainOther: await st("api/v1/explain?tenant=zeta-corp"),
			metricOther: await st("api/v1/metrics/put_ops?target=tenant:zeta-corp"),
			tenants: tenants.tenants.map(t => t.name).join(","),
			policies: JSON.stringify(pol),
			metrics: raw,
		};
	})()`)
	for _, k := range []string{"other", "otherUsage", "controllers", "explainOther", "metricOther"} {
		if v, _ := answers[k].(float64); v != http.StatusForbidden {
			t.Errorf("tenant request %s: status %v, want 403", k, answers[k])
		}
	}
	if answers["tenants"] != "acme" {
		t.Errorf("tenant sees tenants %v", answers["tenants"])
	}
	for _, k := range []string{"policies", "metrics"} {
		if s, _ := answers[k].(string); strings.Contains(s, "zeta") {
			t.Errorf("tenant's %s mention zeta-corp: %s", k, s)
		}
	}
	if s, _ := answers["policies"].(string); !strings.Contains(s, "burst") {
		t.Errorf("tenant does not see its own policies: %s", s)
	}

	pageErrs.Lock()
	defer pageErrs.Unlock()
	for _, e := range pageErrs.list {
		t.Errorf("page error: %s", e)
	}
}

// adminPages are the dashboard's sections as the admin sees them, with
// what shows each is drawn.
var adminPages = []struct{ hash, ready, name string }{
	{"#/overview", `svg[data-plot="aggregate-bw"]`, "overview"},
	{"#/tenants", `tr[data-tenant="acme"]`, "tenants"},
	{"#/policies", `tr[data-show]`, "policies"},
	{"#/filters", "#filter-upload", "filters"},
	{"#/slos", `svg[data-plot="slo-acme"]`, "slos"},
	{"#/controllers", `tr[data-controller]`, "controllers"},
	{"#/nodes", `tr[data-cache-node]`, "nodes"},
	{"#/volumes", `section[data-page="volumes"] h1`, "volumes"},
}

// unlabelledControls lists the visible form controls and buttons that
// have no accessible name (a label, aria-label, aria-labelledby or, for
// buttons and links, their text).
const unlabelledControls = `[...document.querySelectorAll("input:not([type=hidden]), select, textarea, button, a[href]")]
	.filter(el => el.offsetParent !== null)
	.filter(el => {
		if ((el.getAttribute("aria-label") || "").trim()) return false;
		const by = el.getAttribute("aria-labelledby");
		if (by && by.split(/\s+/).some(id => (document.getElementById(id) || {textContent: ""}).textContent.trim())) return false;
		if (el.labels && [...el.labels].some(l => l.textContent.trim())) return false;
		if ((el.tagName === "BUTTON" || el.tagName === "A") && el.textContent.trim()) return false;
		if (el.tagName === "INPUT" && ["submit", "button"].includes(el.type) && el.value.trim()) return false;
		return true;
	})
	.map(el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.name ? "[name=" + el.name + "]" : ""))`

// squeezedCells lists visible table cells holding more than 40
// characters of text in less than 160 px.
const squeezedCells = `[...document.querySelectorAll("td")]
	.filter(td => td.offsetParent !== null && td.textContent.trim().length > 40 && td.getBoundingClientRect().width < 160)
	.map(td => td.textContent.trim().slice(0, 40))`

// sameNamedDangerButtons lists the accessible names that more than one
// destructive button of the page shares ("Delete" on every row).
const sameNamedDangerButtons = `(() => {
	const seen = {};
	for (const b of document.querySelectorAll("button.danger")) {
		const n = (b.getAttribute("aria-label") || b.textContent).trim();
		seen[n] = (seen[n] || 0) + 1;
	}
	return Object.keys(seen).filter(n => seen[n] > 1);
})()`

// repoRoot is the module's root (the e2e tests run in test/e2e).
func repoRoot(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// expectedRefusal tells the answers the dashboard gets on purpose: the
// session probe before signing in (401), the tenant scope's refusals in
// this test (403), and the APIs this build may lack, which the pages show
// as "not available" (404, or 501 when a part is off).
func expectedRefusal(e *cdplog.Entry) bool {
	switch {
	case strings.Contains(e.Text, "401"):
		return strings.HasSuffix(e.URL, "/ui/api/session")
	case strings.Contains(e.Text, "403"):
		return true
	case strings.Contains(e.Text, "404"), strings.Contains(e.Text, "501"):
		for _, p := range []string{"/ui/api/v1/slos", "/ui/api/v1/bw", "/ui/api/v1/volumes", "/ui/api/v1/pools", "/ui/api/v1/nodes"} {
			if strings.Contains(e.URL, p) {
				return true
			}
		}
	}
	return false
}

// evalJS evaluates a script in the page (awaiting a promise) and decodes
// its value.
func evalJS[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %.60s: %v", expr, err)
	}
	return v
}

// checkCSRF replays the browser's session cookie from another client:
// changes without the CSRF token, or with a wrong one, are refused.
func checkCSRF(t *testing.T, base, cookie string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse(base + "/ui/")
	jar.SetCookies(u, []*http.Cookie{{Name: "facet_session", Value: cookie, Path: "/ui/"}})
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	for _, tok := range []string{"", "not-the-token"} {
		req, _ := http.NewRequest(http.MethodPost, base+"/ui/api/v1/tenants", strings.NewReader(`{"name":"csrf-victim"}`))
		req.Header.Set("Content-Type", "application/json")
		if tok != "" {
			req.Header.Set("X-CSRF-Token", tok)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST with CSRF token %q: %d, want 403", tok, resp.StatusCode)
		}
	}
	// Reads need no token.
	resp, err := c.Get(base + "/ui/api/v1/tenants")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET with the session cookie: %d", resp.StatusCode)
	}
}

// startUIBenchLoad runs `facet bench run` for acme in the background: 12 s
// of PUTs and GETs, well above the dynamic policy's 3 PUTs per second.
func startUIBenchLoad(t *testing.T, s *server, ak, sk string) <-chan error {
	t.Helper()
	dir := t.TempDir()
	scenario := fmt.Sprintf(`
name: ui-load
duration: 12s
tenants:
  - name: acme
    endpoint: %s
    access_key_env: UI_AK
    secret_key_env: UI_SK
    bucket: acme-load
    concurrency: 2
    rate: 40
    mix: {put: 1, get: 1}
    size: {dist: fixed, size: 16KiB}
    keys: {count: 50, prepopulate: -1}
`, s.endpoint())
	path := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(path, []byte(scenario), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	cmd := exec.CommandContext(ctx, facetBin, "bench", "run", "-f", path, "--out", filepath.Join(dir, "out"))
	cmd.Env = append(os.Environ(), "UI_AK="+ak, "UI_SK="+sk)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		defer cancel()
		if err := cmd.Wait(); err != nil {
			done <- fmt.Errorf("facet bench run: %w\n%s", err, out.String())
			return
		}
		var rep struct {
			Tenants []struct {
				Total struct{ Ops, Errors int64 } `json:"total"`
			} `json:"tenants"`
		}
		raw, err := os.ReadFile(filepath.Join(dir, "out", "result.json"))
		if err == nil {
			err = json.Unmarshal(raw, &rep)
		}
		if err == nil && (len(rep.Tenants) != 1 || rep.Tenants[0].Total.Ops == 0 || rep.Tenants[0].Total.Errors != 0) {
			err = fmt.Errorf("bench load: %+v", rep.Tenants)
		}
		done <- err
	}()
	return done
}

// loginFieldsShown says, for each field of the sign-in card, whether a user
// sees it: laid out with a size, its label included (a hidden attribute that
// a display rule overrides still shows the field).
const loginFieldsShown = `(() => {
  const out = {};
  for (const id of ["login-token", "login-access-key", "login-secret-key"]) {
    const el = document.getElementById(id);
    out[id] = !!el && el.getClientRects().length > 0 && getComputedStyle(el.closest("label") || el).display !== "none";
  }
  return out;
})()`

// markerLabelOverlaps is a function of an SVG plot that returns the pairs of
// policy-marker labels whose boxes intersect.
const markerLabelOverlaps = `(svg => {
  const boxes = [...svg.querySelectorAll("g.marker text")].map(t => ({ label: t.textContent, b: t.getBBox() }));
  const bad = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i].b, b = boxes[j].b;
    if (a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height) bad.push(boxes[i].label + " / " + boxes[j].label);
  }
  return bad;
})`
