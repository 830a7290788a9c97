package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/storage/fs"
	"github.com/facet-sds/facet/internal/storage/integrity"
)

// What checking every block of a GET costs (issue 22 item 5): the same
// objects served over loopback HTTP from the same filesystem store,
// through the integrity decorator with verification (every block read
// into user space and checked) and without (the stored file handed to
// net/http as it stands: sendfile), alternating request by request in one
// run; and the scrubber's read (verified, to nowhere) against a raw read.

// IntegrityRow is one size's figures.
type IntegrityRow struct {
	Size int64 `json:"size"`
	N    int   `json:"n"`
	// Median latency of one GET, and throughput (Size / median).
	Verified, Unverified time.Duration
}

// IntegrityReport is the run's figures.
type IntegrityReport struct {
	Rows []IntegrityRow
	// CheckedMBps and RawMBps: reading the large object checked and
	// unchecked, in-process, to nowhere; ScrubMBps: a scrub run of the
	// store (both objects, unpaced: no QoS class).
	CheckedMBps, RawMBps, ScrubMBps float64
}

// RunIntegrity measures in dir (a store is created there). n is how many
// GETs of the small object each way; the large one gets n/100 (at least
// 5).
func RunIntegrity(ctx context.Context, dir string, n int) (IntegrityReport, error) {
	var rep IntegrityReport
	raw, err := fs.Open(ctx, dir, fs.Options{NoSync: true})
	if err != nil {
		return rep, err
	}
	defer raw.Close()
	if err := raw.CreateBucket(ctx, "b"); err != nil {
		return rep, err
	}
	checked := integrity.Wrap(raw, integrity.Options{})
	unchecked := integrity.Wrap(raw, integrity.Options{NoVerify: true})
	sizes := []int64{4 << 10, 64 << 20}
	for _, size := range sizes {
		body := textLike(int(size))
		if _, err := checked.PutObject(ctx, "b", strconv.FormatInt(size, 10), storage.PutInput{Body: bytes.NewReader(body),
			Seal: func(m *storage.ObjectMeta) error { m.Size = size; return nil }}); err != nil {
			return rep, err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return rep, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b storage.Backend = unchecked
		if r.URL.Query().Get("verify") == "1" {
			b = checked
		}
		rc, info, err := b.GetObject(r.Context(), "b", r.URL.Path[1:], nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer rc.Close()
		w.Header().Set("Content-Length", strconv.FormatInt(info.StoredSize, 10))
		io.Copy(w, rc)
	}), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	cli := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	get := func(key string, verify bool) (time.Duration, error) {
		url := "http://" + ln.Addr().String() + "/" + key
		if verify {
			url += "?verify=1"
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		t := time.Now()
		resp, err := cli.Do(req)
		if err != nil {
			return 0, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return time.Since(t), err
	}
	for _, size := range sizes {
		key := strconv.FormatInt(size, 10)
		reps := n
		if size > 1<<20 {
			reps = max(5, n/100)
		}
		var ver, unver []time.Duration
		for i := range reps + 1 {
			// Alternate which goes first; the first round warms up.
			for _, v := range []bool{i%2 == 0, i%2 != 0} {
				d, err := get(key, v)
				if err != nil {
					return rep, err
				}
				if i == 0 {
					continue
				}
				if v {
					ver = append(ver, d)
				} else {
					unver = append(unver, d)
				}
			}
		}
		rep.Rows = append(rep.Rows, IntegrityRow{Size: size, N: reps, Verified: medianDur(ver), Unverified: medianDur(unver)})
	}
	big := strconv.FormatInt(sizes[1], 10)
	read := func(b storage.Backend) (float64, error) {
		var best time.Duration
		for range 3 {
			t := time.Now()
			rc, _, err := b.GetObject(ctx, "b", big, nil)
			if err != nil {
				return 0, err
			}
			_, err = io.Copy(io.Discard, rc)
			rc.Close()
			if err != nil {
				return 0, err
			}
			if d := time.Since(t); best == 0 || d < best {
				best = d
			}
		}
		return float64(sizes[1]) / 1e6 / best.Seconds(), nil
	}
	if rep.CheckedMBps, err = read(checked); err != nil {
		return rep, err
	}
	if rep.RawMBps, err = read(raw); err != nil {
		return rep, err
	}
	sc := integrity.NewScrubber(integrity.ScrubConfig{Backend: raw})
	for range 3 {
		t := time.Now()
		if _, err := sc.Start(ctx, "", "b", []integrity.BucketRef{{Tenant: "bench", Bucket: "b"}}); err != nil {
			return rep, err
		}
		sc.Wait()
		d := time.Since(t)
		st, _ := sc.Status()
		if st.State != integrity.ScrubDone || st.OK != int64(len(sizes)) {
			return rep, fmt.Errorf("scrub: %+v", st)
		}
		rep.ScrubMBps = max(rep.ScrubMBps, float64(st.Bytes)/1e6/d.Seconds())
	}
	return rep, nil
}

func medianDur(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[len(d)/2]
}

// WriteIntegrity prints the report as a markdown table.
func WriteIntegrity(w io.Writer, rep IntegrityReport) {
	fmt.Fprintln(w, "| object | GETs each way | verified (median) | unverified, sendfile (median) | verified / unverified |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, r := range rep.Rows {
		mbps := func(d time.Duration) string {
			if r.Size < 1<<20 {
				return d.Round(time.Microsecond).String()
			}
			return fmt.Sprintf("%s (%.0f MB/s)", d.Round(time.Millisecond), float64(r.Size)/1e6/d.Seconds())
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %.2f× |\n", sizeLabel(r.Size), r.N, mbps(r.Verified), mbps(r.Unverified),
			r.Verified.Seconds()/r.Unverified.Seconds())
	}
	fmt.Fprintf(w, "\nin-process, page cache warm: raw read of 64 MiB %.0f MB/s; checked read %.0f MB/s (ratio %.2f); "+
		"facet's scrubber over the store (unpaced) %.0f MB/s (ratio %.2f)\n",
		rep.RawMBps, rep.CheckedMBps, rep.CheckedMBps/rep.RawMBps, rep.ScrubMBps, rep.ScrubMBps/rep.RawMBps)
}
