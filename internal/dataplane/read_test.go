package dataplane

import (
	"net/http"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
)

func TestParseRange(t *testing.T) {
	cases := []struct {
		h       string
		size    int64
		want    storage.Range
		ok, err bool
	}{
		{"bytes=0-9", 100, storage.Range{Start: 0, Length: 10}, true, false},
		{"bytes=90-200", 100, storage.Range{Start: 90, Length: 10}, true, false},
		{"bytes=5-", 100, storage.Range{Start: 5, Length: 95}, true, false},
		{"bytes=-10", 100, storage.Range{Start: 90, Length: 10}, true, false},
		{"bytes=-200", 100, storage.Range{Start: 0, Length: 100}, true, false},
		{"bytes=100-", 100, storage.Range{}, false, true},
		{"bytes=-0", 100, storage.Range{}, false, true},
		{"bytes=0-0", 0, storage.Range{}, false, true},
		{"bytes=9-5", 100, storage.Range{}, false, false},
		{"bytes=0-1,3-4", 100, storage.Range{}, false, false},
		{"items=0-1", 100, storage.Range{}, false, false},
		{"bytes=x-1", 100, storage.Range{}, false, false},
	}
	for _, c := range cases {
		got, ok, err := parseRange(c.h, c.size)
		if ok != c.ok || (err != nil) != c.err || (ok && got != c.want) {
			t.Errorf("parseRange(%q,%d) = %+v,%v,%v", c.h, c.size, got, ok, err)
		}
	}
}

func TestEvalConditions(t *testing.T) {
	lm := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	info := storage.ObjectInfo{LastModified: lm, Meta: storage.ObjectMeta{ETag: "abc"}}
	before, after := lm.Add(-time.Hour).Format(http.TimeFormat), lm.Add(time.Hour).Format(http.TimeFormat)
	cases := []struct {
		hdr  map[string]string
		want int
	}{
		{nil, 0},
		{map[string]string{"If-Match": `"abc"`}, 0},
		{map[string]string{"If-Match": `"zzz"`}, 412},
		{map[string]string{"If-Match": `*`}, 0},
		{map[string]string{"If-None-Match": `"abc"`}, 304},
		{map[string]string{"If-None-Match": `"zzz"`}, 0},
		{map[string]string{"If-Modified-Since": after}, 304},
		{map[string]string{"If-Modified-Since": before}, 0},
		{map[string]string{"If-Unmodified-Since": before}, 412},
		{map[string]string{"If-Unmodified-Since": after}, 0},
		// If-Match true wins over a failing If-Unmodified-Since.
		{map[string]string{"If-Match": `"abc"`, "If-Unmodified-Since": before}, 0},
		// If-None-Match false (changed) wins over If-Modified-Since.
		{map[string]string{"If-None-Match": `"zzz"`, "If-Modified-Since": after}, 0},
	}
	for _, c := range cases {
		cond := Conditions{IfMatch: c.hdr["If-Match"], IfNoneMatch: c.hdr["If-None-Match"],
			IfModifiedSince: c.hdr["If-Modified-Since"], IfUnmodifiedSince: c.hdr["If-Unmodified-Since"]}
		err := cond.eval(info, false)
		got := 0
		if err != nil {
			got = s3err.As(err).Code.Status
		}
		if got != c.want {
			t.Errorf("%v: got %d want %d", c.hdr, got, c.want)
		}
	}
}

func TestPartRangeUsesLogicalSizesOfFilteredParts(t *testing.T) {
	plans := []PartPlan{
		{Size: 5 << 20, Stored: 1000, Plan: Plan{Records: []filter.Record{{Filter: "compression", Version: 1, Size: 1000}}}},
		{Size: 5 << 20, Stored: 5<<20 + 100, Plan: Plan{Records: []filter.Record{{Filter: "encryption", Version: 1, Size: 5<<20 + 100}}}},
		{Size: 7, Stored: 7},
	}
	enc, err := EncodeParts(plans)
	if err != nil {
		t.Fatal(err)
	}
	info := storage.ObjectInfo{Meta: storage.ObjectMeta{
		Size: 10<<20 + 7, PartsCount: 3,
		PartSizes: []int64{1000, 5<<20 + 100, 7}, // stored sizes, as the backend records them
		System:    map[string]string{PartsKey: enc},
	}}
	for n, want := range map[int]storage.Range{
		1: {Start: 0, Length: 5 << 20},
		2: {Start: 5 << 20, Length: 5 << 20},
		3: {Start: 10 << 20, Length: 7},
	} {
		got, err := partRange(info, n)
		if err != nil || *got != want {
			t.Errorf("partRange(part %d) = %+v, %v; want %+v", n, got, err, want)
		}
	}
	if _, err := partRange(info, 4); err == nil {
		t.Errorf("partRange(part 4 of 3) succeeded")
	}
	// Without filters the backend's sizes are the logical ones.
	plain := storage.ObjectInfo{Meta: storage.ObjectMeta{Size: 12, PartsCount: 2, PartSizes: []int64{5, 7}}}
	if got, err := partRange(plain, 2); err != nil || *got != (storage.Range{Start: 5, Length: 7}) {
		t.Errorf("partRange(plain part 2) = %+v, %v", got, err)
	}
}
