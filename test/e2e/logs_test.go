package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// logLines are the server's JSON log lines so far.
func (s *server) logLines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(s.logBytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// metricsText is the server's /metrics.
func (s *server) metricsText(t *testing.T) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+s.adminAddr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// What an administrator reads on day one (issue 25): an S3 operation
// Facet lacks (s3cmd info and mc stat ask for several) is a client error
// logged at INFO under its name, a HEAD of a missing key (rclone asks one
// per file) is not an error at ERROR, neither counts as a server error on
// /metrics; durations are milliseconds; a fresh server neither warns
// about bandwidth targets it does not have nor names a bus port it did
// not open; facet_build_info says the build, as facet version does.
func TestDayOneLogsAndMetrics(t *testing.T) {
	if gatewayTarget() {
		t.Skip("reads facet serve's own log")
	}
	s := startServerEnv(t, t.TempDir(), "e2e-admin-"+randHex(16), []string{"FACET_LOG_LEVEL=debug", "FACET_NBD_ADDR=" + freeAddr(t)})
	cr := s.createTenant(t, "logs"+randHex(3))
	cl := s.sdk(cr)
	ctx := context.Background()
	bucket := "logs-" + randHex(4)
	mkBucket(t, cl, bucket)
	_, err := cl.PutBucketWebsite(ctx, &s3.PutBucketWebsiteInput{Bucket: &bucket, WebsiteConfiguration: &types.WebsiteConfiguration{
		IndexDocument: &types.IndexDocument{Suffix: aws.String("index.html")}}})
	if err == nil || !strings.Contains(err.Error(), "PutBucketWebsite is not implemented") {
		t.Fatalf("PutBucketWebsite: %v", err)
	}
	if _, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("missing")}); err == nil {
		t.Fatal("HEAD of a missing key succeeded")
	}

	var website, head map[string]any
	eventually(t, 10*time.Second, "the error lines reach the log", func() error {
		website, head = nil, nil
		for _, m := range s.logLines(t) {
			if m["msg"] != "s3 error" {
				continue
			}
			switch m["op"] {
			case "PutBucketWebsite":
				website = m
			case "HeadObject":
				head = m
			}
		}
		if website == nil || head == nil {
			return fmt.Errorf("PutBucketWebsite %v, HeadObject %v", website, head)
		}
		return nil
	})
	if website["level"] != "INFO" || website["code"] != "NotImplemented" || website["message"] != "PutBucketWebsite is not implemented" {
		t.Errorf("the 501's line: %v", website)
	}
	if _, ok := website["err"]; ok {
		t.Errorf("the 501's line has an err: %v", website)
	}
	if head["level"] != "DEBUG" || head["code"] != "NoSuchKey" {
		t.Errorf("the HEAD 404's line: %v", head)
	}
	sawDuration := false
	for _, m := range s.logLines(t) {
		if m["level"] == "ERROR" {
			t.Errorf("an ERROR line on a healthy server: %v", m)
		}
		msg, _ := m["msg"].(string)
		if strings.Contains(msg, "I/O priorities cannot work") || strings.Contains(msg, "bus connected") {
			t.Errorf("a fresh server says %v", m)
		}
		if m["msg"] == "admin request" {
			if _, ok := m["duration_ms"].(float64); !ok || m["duration"] != nil {
				t.Errorf("admin request duration: %v", m)
			}
			sawDuration = true
		}
	}
	if !sawDuration {
		t.Error("no admin request line")
	}
	if !strings.Contains(string(s.logBytes()), `"msg":"bus in-process"`) {
		t.Error(`no "bus in-process" line`)
	}

	metrics := s.metricsText(t)
	for _, want := range []string{
		fmt.Sprintf(`facet_s3_requests_total{class="client_error",code="NotImplemented",op="PutBucketWebsite",tenant="%s"} 1`, cr.Tenant),
		fmt.Sprintf(`facet_s3_requests_total{class="client_error",code="NoSuchKey",op="HeadObject",tenant="%s"} 1`, cr.Tenant),
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(metrics, `class="server_error"`) || strings.Contains(metrics, `op="-"`) {
		t.Errorf("/metrics counts a server error or an unnamed operation:\n%s", grepLines(metrics, "facet_s3_requests_total"))
	}
	version, err := exec.CommandContext(ctx, facetBin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Version, Commit string
		GoVersion       string `json:"go_version"`
	}
	if err := json.Unmarshal(version, &info); err != nil || info.Version == "" || info.GoVersion == "" {
		t.Fatalf("facet version -o json: %s %v", version, err)
	}
	if first := s.logLines(t); len(first) == 0 || first[0]["msg"] != "facet serve" || first[0]["version"] != info.Version || first[0]["commit"] != info.Commit {
		t.Errorf("the log does not open with the build: %v", first[:min(1, len(first))])
	}
	want := fmt.Sprintf(`facet_build_info{commit="%s",goversion="%s",version="%s"} 1`, info.Commit, info.GoVersion, info.Version)
	if !strings.Contains(metrics, want) {
		t.Errorf("/metrics lacks %s:\n%s", want, grepLines(metrics, "facet_build_info"))
	}
}

// grepLines are the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
