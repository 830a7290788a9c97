package storage_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/qos"
	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/storage/fs"
)

type owners map[string][]string

func (o owners) Tenants(context.Context) ([]string, error) {
	var out []string
	for t := range o {
		out = append(out, t)
	}
	return out, nil
}

func (o owners) Buckets(_ context.Context, tenant string) ([]string, error) { return o[tenant], nil }

// background admits the cleanup's work in the limiter's background class.
type background struct{ l *qos.Limiter }

func (b background) AdmitBackground(ctx context.Context, tenant string) (storage.BackgroundWork, error) {
	st, err := b.l.AdmitBackground(ctx, tenant)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// The cleanup aborts only expired uploads, in the owner's background flow,
// at the rate the tenant's background cap sets.
func TestMultipartCleanupRunsAsBackground(t *testing.T) {
	ctx := context.Background()
	be, err := fs.Open(ctx, t.TempDir(), fs.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	if err := be.CreateBucket(ctx, "b1"); err != nil {
		t.Fatal(err)
	}
	up, err := be.CreateUpload(ctx, "b1", "big", storage.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	part := bytes.Repeat([]byte("p"), 200<<10)
	if _, err := be.PutPart(ctx, "b1", "big", up.UploadID, 1, storage.PutInput{Body: bytes.NewReader(part), Meta: storage.ObjectMeta{Size: int64(len(part))}}); err != nil {
		t.Fatal(err)
	}
	l := qos.NewLimiter(qos.LimiterConfig{Node: "n1", SLOs: qos.SLOMap{"t1": {Background: 1e6}}})
	c := &storage.MultipartCleanup{Backend: be, Owners: owners{"t1": {"b1"}}, Background: background{l}, Expiry: time.Hour, Log: slog.New(slog.DiscardHandler)}

	c.Now = time.Now // not expired yet
	if n, err := c.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("fresh upload: aborted %d, %v", n, err)
	}
	c.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if n, err := c.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("expired upload: aborted %d, %v", n, err)
	}
	if _, err := be.GetUpload(ctx, "b1", "big", up.UploadID); !errors.Is(err, storage.ErrUploadNotFound) {
		t.Fatalf("upload still there: %v", err)
	}
	rep := l.Report()
	if len(rep.Flows) != 1 || rep.Flows[0].Class != qos.ClassBackground || rep.Flows[0].Tenant != "t1" || rep.Flows[0].Rate != 1e6 || rep.Flows[0].Served == 0 {
		t.Fatalf("background flow not reported as capped: %+v", rep.Flows)
	}
}
