package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/storage"
)

func putPart(t testing.TB, s *Store, key, id string, n int, body []byte) storage.Part {
	t.Helper()
	p, err := s.PutPart(context.Background(), "b", key, id, n, storage.PutInput{
		Body: bytes.NewReader(body),
		Seal: func(m *storage.ObjectMeta) error {
			m.ETag, m.Size = etagOf(body), int64(len(body))
			return nil
		},
	})
	if err != nil {
		t.Fatalf("PutPart %d: %v", n, err)
	}
	return p
}

func cpart(n int, etag string) storage.CompletePart {
	return storage.CompletePart{Number: n, ETag: etag}
}

func TestMultipart(t *testing.T) {
	s, dir := newStore(t)
	ctx := context.Background()
	up, err := s.CreateUpload(ctx, "b", "big", storage.ObjectMeta{ContentType: "video/mp4"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Trim(up.UploadID, "0123456789abcdef") != "" || up.Initiated.IsZero() {
		t.Fatalf("upload = %+v", up)
	}
	got, err := s.GetUpload(ctx, "b", "big", up.UploadID)
	if err != nil || got.Meta.ContentType != "video/mp4" || got.UploadID != up.UploadID {
		t.Fatalf("GetUpload = %+v, %v", got, err)
	}
	_, err = s.GetUpload(ctx, "b", "other-key", up.UploadID)
	wantErr(t, err, storage.ErrUploadNotFound)

	bodies := map[int][]byte{}
	for n := 1; n <= 4; n++ {
		bodies[n] = bytes.Repeat([]byte{byte('0' + n)}, n*100000)
		p := putPart(t, s, "big", up.UploadID, n, bodies[n])
		if p.Number != n || p.ETag != etagOf(bodies[n]) || p.StoredSize != int64(len(bodies[n])) {
			t.Fatalf("part = %+v", p)
		}
	}
	// Uploading part 2 again replaces it and its file.
	bodies[2] = []byte("second version of part two")
	putPart(t, s, "big", up.UploadID, 2, bodies[2])
	if n := len(dataFiles(t, dir)); n != 4 {
		t.Fatalf("%d data files for 4 parts", n)
	}

	parts, trunc, err := s.ListParts(ctx, "b", "big", up.UploadID, 0, 0)
	if err != nil || trunc || len(parts) != 4 {
		t.Fatalf("ListParts = %d parts, %v, %v", len(parts), trunc, err)
	}
	if parts[1].ETag != etagOf(bodies[2]) {
		t.Fatalf("part 2 ETag %q, want the re-upload's", parts[1].ETag)
	}
	page, trunc, err := s.ListParts(ctx, "b", "big", up.UploadID, 1, 2)
	if err != nil || !trunc || len(page) != 2 || page[0].Number != 2 || page[1].Number != 3 {
		t.Fatalf("ListParts(marker 1, max 2) = %+v, %v, %v", page, trunc, err)
	}
	page, trunc, err = s.ListParts(ctx, "b", "big", up.UploadID, 3, 2)
	if err != nil || trunc || len(page) != 1 || page[0].Number != 4 {
		t.Fatalf("ListParts(marker 3) = %+v, %v, %v", page, trunc, err)
	}

	complete := func(cp []storage.CompletePart) error {
		_, err := s.CompleteUpload(ctx, "b", "big", up.UploadID, cp, storage.ObjectMeta{})
		return err
	}
	wantErr(t, complete(nil), storage.ErrInvalidPart)
	wantErr(t, complete([]storage.CompletePart{cpart(1, etagOf(bodies[1])), cpart(5, "x")}), storage.ErrInvalidPart)
	wantErr(t, complete([]storage.CompletePart{cpart(1, etagOf(bodies[1])), cpart(2, etagOf([]byte("stale")))}), storage.ErrInvalidPart)
	wantErr(t, complete([]storage.CompletePart{cpart(2, etagOf(bodies[2])), cpart(1, etagOf(bodies[1]))}), storage.ErrInvalidPartOrder)
	wantErr(t, complete([]storage.CompletePart{cpart(1, etagOf(bodies[1])), cpart(1, etagOf(bodies[1]))}), storage.ErrInvalidPartOrder)
	_, err = s.CompleteUpload(ctx, "b", "big", "nope", []storage.CompletePart{cpart(1, "x")}, storage.ObjectMeta{})
	wantErr(t, err, storage.ErrUploadNotFound)
	if _, err := s.HeadObject(ctx, "b", "big"); !errors.Is(err, storage.ErrObjectNotFound) {
		t.Fatalf("failed completions created the object: %v", err)
	}

	// Complete with parts 1, 2 and 4 (quoted ETags, as clients send
	// them); part 3 is discarded.
	info, err := s.CompleteUpload(ctx, "b", "big", up.UploadID, []storage.CompletePart{
		cpart(1, `"`+etagOf(bodies[1])+`"`), cpart(2, etagOf(bodies[2])), cpart(4, `"`+etagOf(bodies[4])+`"`),
	}, storage.ObjectMeta{ETag: "abc-3", Size: 42, ContentType: "video/mp4"})
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Concat(bodies[1], bodies[2], bodies[4])
	data, head := getBytes(t, s, "b", "big", nil)
	if !bytes.Equal(data, want) {
		t.Fatalf("object has %d bytes, want %d", len(data), len(want))
	}
	wantSizes := []int64{int64(len(bodies[1])), int64(len(bodies[2])), int64(len(bodies[4]))}
	for _, m := range []storage.ObjectMeta{info.Meta, head.Meta} {
		if m.ETag != "abc-3" || m.Size != 42 || m.PartsCount != 3 || !slices.Equal(m.PartSizes, wantSizes) || m.ContentType != "video/mp4" {
			t.Fatalf("meta = %+v", m)
		}
	}
	if head.StoredSize != int64(len(want)) {
		t.Fatalf("StoredSize %d, want %d", head.StoredSize, len(want))
	}
	// The upload and every part file are gone; only the object's file is left.
	_, err = s.GetUpload(ctx, "b", "big", up.UploadID)
	wantErr(t, err, storage.ErrUploadNotFound)
	_, _, err = s.ListParts(ctx, "b", "big", up.UploadID, 0, 0)
	wantErr(t, err, storage.ErrUploadNotFound)
	if n := len(dataFiles(t, dir)); n != 1 {
		t.Fatalf("%d data files after completion, want 1", n)
	}
	wantErr(t, complete([]storage.CompletePart{cpart(1, etagOf(bodies[1]))}), storage.ErrUploadNotFound)
}

func TestPartErrors(t *testing.T) {
	s, dir := newStore(t)
	ctx := context.Background()
	up, err := s.CreateUpload(ctx, "b", "k", storage.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, -1, 10001} {
		_, err := s.PutPart(ctx, "b", "k", up.UploadID, n, storage.PutInput{Body: strings.NewReader("x")})
		wantErr(t, err, storage.ErrInvalidPart)
	}
	_, err = s.PutPart(ctx, "b", "k", "nope", 1, storage.PutInput{Body: strings.NewReader("x")})
	wantErr(t, err, storage.ErrUploadNotFound)
	_, err = s.PutPart(ctx, "b", "other", up.UploadID, 1, storage.PutInput{Body: strings.NewReader("x")})
	wantErr(t, err, storage.ErrUploadNotFound)
	_, err = s.PutPart(ctx, "b", "k", "", 1, storage.PutInput{Body: strings.NewReader("x")})
	wantErr(t, err, storage.ErrUploadNotFound)
	veto := errors.New("bad digest")
	_, err = s.PutPart(ctx, "b", "k", up.UploadID, 1, storage.PutInput{
		Body: strings.NewReader("x"),
		Seal: func(*storage.ObjectMeta) error { return veto },
	})
	wantErr(t, err, veto)
	if parts, _, _ := s.ListParts(ctx, "b", "k", up.UploadID, 0, 0); len(parts) != 0 {
		t.Fatalf("vetoed part listed: %+v", parts)
	}
	putPart(t, s, "k", up.UploadID, 1, []byte("x"))
	if err := s.AbortUpload(ctx, "b", "k", up.UploadID); err != nil {
		t.Fatal(err)
	}
	wantErr(t, s.AbortUpload(ctx, "b", "k", up.UploadID), storage.ErrUploadNotFound)
	_, err = s.PutPart(ctx, "b", "k", up.UploadID, 2, storage.PutInput{Body: strings.NewReader("x")})
	wantErr(t, err, storage.ErrUploadNotFound)
	if n := len(dataFiles(t, dir)); n != 0 {
		t.Fatalf("%d data files after abort", n)
	}
}

func TestListUploads(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	type u struct{ key, id string }
	var all []u
	for _, k := range []string{"a", "a/1", "a/2", "b", "a", "c/x/y", "c/z", "a/1"} {
		up, err := s.CreateUpload(ctx, "b", k, storage.ObjectMeta{})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, u{k, up.UploadID})
	}
	// S3 order: by key, then by initiation (the creation order here).
	slices.SortStableFunc(all, func(x, y u) int { return strings.Compare(x.key, y.key) })

	res, err := s.ListUploads(ctx, "b", storage.ListUploadsOptions{})
	if err != nil || res.IsTruncated || len(res.Uploads) != len(all) {
		t.Fatalf("ListUploads = %+v, %v", res, err)
	}
	for i, up := range res.Uploads {
		if up.Key != all[i].key || up.UploadID != all[i].id {
			t.Fatalf("upload %d = %s/%s, want %s/%s", i, up.Key, up.UploadID, all[i].key, all[i].id)
		}
	}

	// Pages of two through the markers cover every upload once.
	var paged []u
	o := storage.ListUploadsOptions{MaxUploads: 2}
	for {
		res, err := s.ListUploads(ctx, "b", o)
		if err != nil {
			t.Fatal(err)
		}
		for _, up := range res.Uploads {
			paged = append(paged, u{up.Key, up.UploadID})
		}
		if !res.IsTruncated {
			break
		}
		o.KeyMarker, o.UploadIDMarker = res.NextKeyMarker, res.NextUploadIDMarker
	}
	if !slices.Equal(paged, all) {
		t.Fatalf("paged %v, want %v", paged, all)
	}

	// A key marker alone skips every upload of that key.
	res, err = s.ListUploads(ctx, "b", storage.ListUploadsOptions{KeyMarker: "a/1"})
	if err != nil || len(res.Uploads) == 0 || res.Uploads[0].Key != "a/2" {
		t.Fatalf("after key marker a/1: %+v, %v", res.Uploads, err)
	}

	res, err = s.ListUploads(ctx, "b", storage.ListUploadsOptions{Delimiter: "/"})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, up := range res.Uploads {
		keys = append(keys, up.Key)
	}
	if !slices.Equal(keys, []string{"a", "a", "b"}) || !slices.Equal(res.CommonPrefixes, []string{"a/", "c/"}) {
		t.Fatalf("delimiter listing: uploads %v, prefixes %v", keys, res.CommonPrefixes)
	}
	res, err = s.ListUploads(ctx, "b", storage.ListUploadsOptions{Prefix: "c/", Delimiter: "/"})
	if err != nil || len(res.Uploads) != 1 || res.Uploads[0].Key != "c/z" || !slices.Equal(res.CommonPrefixes, []string{"c/x/"}) {
		t.Fatalf("prefix c/: %+v, %v", res, err)
	}
	// A page ending on a common prefix resumes after it.
	res, err = s.ListUploads(ctx, "b", storage.ListUploadsOptions{Delimiter: "/", MaxUploads: 3})
	if err != nil || !res.IsTruncated || res.NextKeyMarker != "a/" {
		t.Fatalf("first page: %+v, %v", res, err)
	}
	res, err = s.ListUploads(ctx, "b", storage.ListUploadsOptions{Delimiter: "/", KeyMarker: res.NextKeyMarker, UploadIDMarker: res.NextUploadIDMarker})
	if err != nil || len(res.Uploads) != 1 || res.Uploads[0].Key != "b" || !slices.Equal(res.CommonPrefixes, []string{"c/"}) {
		t.Fatalf("second page: %+v, %v", res, err)
	}
}

func TestMultipartManyParts(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	up, err := s.CreateUpload(ctx, "b", "k", storage.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	var cp []storage.CompletePart
	var want []byte
	for n := 1; n <= 1001; n++ {
		body := []byte(fmt.Sprint("part", n, ";"))
		p := putPart(t, s, "k", up.UploadID, n, body)
		cp = append(cp, storage.CompletePart{Number: n, ETag: p.ETag})
		want = append(want, body...)
	}
	parts, trunc, err := s.ListParts(ctx, "b", "k", up.UploadID, 0, 0)
	if err != nil || !trunc || len(parts) != 1000 {
		t.Fatalf("ListParts default max: %d parts, truncated %v, %v", len(parts), trunc, err)
	}
	if _, err := s.CompleteUpload(ctx, "b", "k", up.UploadID, cp, storage.ObjectMeta{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := getBytes(t, s, "b", "k", nil); !bytes.Equal(got, want) {
		t.Fatalf("assembled %q..., want %q...", got[:20], want[:20])
	}
}

// TestDeleteBucketDropsPartFiles: deleting a bucket whose only content is
// open uploads aborts them, and their parts' data files go with them.
func TestDeleteBucketDropsPartFiles(t *testing.T) {
	s, dir := newStore(t)
	ctx := context.Background()
	for _, key := range []string{"a", "b/c"} {
		up, err := s.CreateUpload(ctx, "b", key, storage.ObjectMeta{})
		if err != nil {
			t.Fatal(err)
		}
		putPart(t, s, key, up.UploadID, 1, []byte("one"))
		putPart(t, s, key, up.UploadID, 2, []byte("two"))
	}
	if n := len(dataFiles(t, dir)); n != 4 {
		t.Fatalf("%d data files before, want 4", n)
	}
	if err := s.DeleteBucket(ctx, "b"); err != nil {
		t.Fatalf("DeleteBucket: %v", err)
	}
	if f := dataFiles(t, dir); len(f) != 0 {
		t.Fatalf("data files left: %v", f)
	}
}
