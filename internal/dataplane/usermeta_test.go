package dataplane

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/storage"
)

// oneKey is a KeyProvider with one data key per tenant.
type oneKey map[string][]byte

func (k oneKey) CurrentKey(_ context.Context, tenant string) (string, []byte, error) {
	return "k1", k[tenant], nil
}
func (k oneKey) Key(_ context.Context, tenant, id string) ([]byte, error) {
	if id != "k1" {
		return nil, errors.New("no such key")
	}
	return k[tenant], nil
}

type owners map[string]string

func (o owners) BucketOwner(_ context.Context, bucket string) (string, time.Time, error) {
	return o[bucket], time.Time{}, nil
}

func TestUserMetaSealedUnderEncryption(t *testing.T) {
	ctx := context.Background()
	raw := storeWithBucket(t)
	for _, b := range []string{"b", "c"} {
		if err := raw.CreateBucket(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	keys := oneKey{"t": bytes.Repeat([]byte{1}, 32), "u": bytes.Repeat([]byte{2}, 32)}
	s := SealUserMeta(raw, keys, owners{"b": "t", "c": "t"})
	plan, _ := Plan{Records: []filter.Record{{Filter: "encryption", Version: 1}}}.Encode()
	put := func(key string, system map[string]string) storage.ObjectInfo {
		info, err := s.PutObject(ctx, "b", key, storage.PutInput{Body: strings.NewReader("x"),
			Meta: storage.ObjectMeta{UserMeta: map[string]string{"secret": "v-" + key}, System: system}})
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	if info := put("enc", map[string]string{PlanKey: plan}); info.Meta.UserMeta["secret"] != "v-enc" {
		t.Fatalf("PutObject answers %v", info.Meta.UserMeta)
	}
	put("clear", nil)
	stored, _ := raw.HeadObject(ctx, "b", "enc")
	if stored.Meta.UserMeta != nil || !strings.HasPrefix(stored.Meta.System[UserMetaKey], "k1:") {
		t.Fatalf("stored: user meta %v, sealed %q", stored.Meta.UserMeta, stored.Meta.System[UserMetaKey])
	}
	if got, _ := raw.HeadObject(ctx, "b", "clear"); got.Meta.UserMeta["secret"] != "v-clear" || got.Meta.System[UserMetaKey] != "" {
		t.Fatalf("an unencrypted object's metadata: %+v", got.Meta)
	}
	info, err := s.HeadObject(ctx, "b", "enc")
	if err != nil || info.Meta.UserMeta["secret"] != "v-enc" || info.Meta.System[UserMetaKey] != "" {
		t.Fatalf("HEAD: %+v %v", info.Meta, err)
	}
	// Sealed metadata moved to another key, or to another tenant's
	// bucket, does not open; nor does an altered one.
	for _, tc := range []struct {
		bucket, key string
		own         owners
		edit        func(string) string
	}{
		{"b", "other", owners{"b": "t"}, nil},
		{"c", "enc", owners{"b": "t", "c": "u"}, nil},
		{"b", "enc", owners{"b": "t"}, func(v string) string { return v[:len(v)-4] + "AAA=" }},
	} {
		m := stored.Meta
		m.System = map[string]string{PlanKey: plan, UserMetaKey: stored.Meta.System[UserMetaKey]}
		if tc.edit != nil {
			m.System[UserMetaKey] = tc.edit(m.System[UserMetaKey])
		}
		if _, err := raw.PutObject(ctx, tc.bucket, tc.key, storage.PutInput{Body: strings.NewReader("x"), Meta: m}); err != nil {
			t.Fatal(err)
		}
		s := SealUserMeta(raw, keys, tc.own)
		if _, err := s.HeadObject(ctx, tc.bucket, tc.key); !errors.Is(err, filter.ErrIntegrity) {
			t.Errorf("%s/%s: %v", tc.bucket, tc.key, err)
		}
	}
}
