package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// The hit path's cost, broken down (issue 12): what one GET of a cached
// object pays against the backend round trips it saves. Measured one
// request at a time, so that each figure is a request's own cost rather
// than a share of a busy machine.

// HitPathReport is the breakdown: medians of one request at a time on
// objects of Size bytes.
type HitPathReport struct {
	Size int64
	N    int
	// Straight to versitygw: a HEAD and a GET.
	StoreHead, StoreGet time.Duration
	// Through Facet: a HEAD (the metadata read every GET makes), a GET
	// on a bucket without caching, and a cache hit.
	FacetHead, FacetGet, FacetHit time.Duration
	// NotHits counts the timed hits that missed (left out).
	NotHits int
}

// runHitPath measures the breakdown on n rounds over 16 objects of size
// bytes, in a bucket with and one without caching.
func runHitPath(ctx context.Context, gw *gateway, store *gateway, size int64, n int) (HitPathReport, error) {
	rep := HitPathReport{Size: size, N: n}
	const objects = 16
	payload := textLike(int(size))
	for _, b := range []string{"hpplain", "hpcache"} {
		if err := gw.do(ctx, http.MethodPut, "/"+b, nil, 0, nil); err != nil {
			return rep, fmt.Errorf("create bucket %s: %w", b, err)
		}
		for i := range objects {
			if err := gw.do(ctx, http.MethodPut, fmt.Sprintf("/%s/o%02d", b, i), payload, size, nil); err != nil {
				return rep, err
			}
		}
	}
	if err := gw.applyPolicy(ctx, "FOR BUCKET bench/hpcache DO SET caching WITH size=256MB, admit=get"); err != nil {
		return rep, err
	}
	// Warm the cache: fills commit in the background (and a large one may
	// be given up when the disk falls behind), so read until a whole
	// round of the objects hits.
	deadline := time.Now().Add(30 * time.Second)
	for i, run := 0, 0; run < objects; i++ {
		_, c, err := gw.getCache(ctx, fmt.Sprintf("/hpcache/o%02d", i%objects), size)
		if err != nil {
			return rep, err
		}
		if run++; c != "hit" {
			run = 0
		}
		if time.Now().After(deadline) {
			return rep, fmt.Errorf("hit path: the cache did not fill in 30 s")
		}
	}
	// timeOne times n requests; when want is set, the answers that are
	// not it (a hit's entry evicted or dropped meanwhile) are left out and
	// counted.
	timeOne := func(f func(i int) (string, error), want string) (time.Duration, error) {
		lats := make([]time.Duration, 0, n)
		for i := range n {
			t := time.Now()
			got, err := f(i)
			if err != nil {
				return 0, err
			}
			if want != "" && got != want {
				rep.NotHits++
				continue
			}
			lats = append(lats, time.Since(t))
		}
		return resultOf("", lats, 0, 0).P50, nil
	}
	head := func(g *gateway, prefix string) func(int) (string, error) {
		return func(i int) (string, error) {
			return "", g.do(ctx, http.MethodHead, fmt.Sprintf("%s/o%02d", prefix, i%objects), nil, 0, nil)
		}
	}
	get := func(g *gateway, prefix string) func(int) (string, error) {
		return func(i int) (string, error) {
			_, c, err := g.getCache(ctx, fmt.Sprintf("%s/o%02d", prefix, i%objects), size)
			return c, err
		}
	}
	// The objects as Facet stored them in versitygw (no filter: the same
	// bytes), under Facet's key layout in the backend bucket.
	var err error
	steps := []struct {
		d    *time.Duration
		f    func(int) (string, error)
		want string
	}{
		{&rep.StoreHead, head(store, "/facet/bench/hpplain"), ""},
		{&rep.StoreGet, get(store, "/facet/bench/hpplain"), ""},
		{&rep.FacetHead, head(gw, "/hpplain"), ""},
		{&rep.FacetGet, get(gw, "/hpplain"), ""},
		{&rep.FacetHit, get(gw, "/hpcache"), "hit"},
	}
	for _, s := range steps {
		if *s.d, err = timeOne(s.f, s.want); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// writeHitPath prints the breakdown.
func writeHitPath(w io.Writer, r HitPathReport) {
	fmt.Fprintf(w, "\nHit path, one request at a time, %d KiB objects (median of %d):\n\n", r.Size>>10, r.N)
	fmt.Fprintln(w, "| request | median |")
	fmt.Fprintln(w, "|---|---:|")
	fmt.Fprintf(w, "| versitygw HEAD, direct | %.2f ms |\n", msf(r.StoreHead))
	fmt.Fprintf(w, "| versitygw GET, direct | %.2f ms |\n", msf(r.StoreGet))
	fmt.Fprintf(w, "| Facet HEAD (the metadata read of every GET) | %.2f ms |\n", msf(r.FacetHead))
	fmt.Fprintf(w, "| Facet GET, bucket without caching | %.2f ms |\n", msf(r.FacetGet))
	fmt.Fprintf(w, "| Facet GET, cache hit | %.2f ms |\n", msf(r.FacetHit))
	if r.NotHits > 0 {
		fmt.Fprintf(w, "\n(%d of the %d timed hits missed and are left out)\n", r.NotHits, r.N)
	}
}
