package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// Two clients create the same bucket at once through two gateways, and a
// third watches for it with HEAD on gateway 2 (as rclone and mc do before
// they write): a create, or a HEAD that says 200, means the bucket is
// usable everywhere at once, so the PUT right after it succeeds through
// either gateway. (The name used to be claimed in the metadata store
// before the backend had the bucket, and HEAD said 200 in between.)
func TestClusterCreateBucketRace(t *testing.T) {
	c := startCluster(t, clusterOptions{Gateways: 2})
	cr := c.gw[0].createTenant(t, "race"+randHex(3))
	cl := []*s3.Client{c.gw[0].sdk(cr), c.gw[1].sdk(cr)}
	ctx := context.Background()
	body := []byte("first object")
	for round := range 12 {
		bucket := fmt.Sprintf("race-%d-%s", round, randHex(3))
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, 3)
		for i, client := range cl {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket})
				var ae smithy.APIError
				if err != nil && !(errors.As(err, &ae) && ae.ErrorCode() == "BucketAlreadyOwnedByYou") {
					errs <- fmt.Errorf("round %d: create through gateway %d: %w", round, i+1, err)
					return
				}
				key := fmt.Sprintf("after-create-%d", i)
				if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(body)}); err != nil {
					errs <- fmt.Errorf("round %d: PUT through gateway %d right after its create answered: %w", round, i+1, err)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for {
				if _, err := cl[1].HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &bucket}); err == nil {
					break
				}
			}
			key := "after-head"
			if _, err := cl[1].PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(body)}); err != nil {
				errs <- fmt.Errorf("round %d: PUT through gateway 2 right after HEAD said 200: %w", round, err)
			}
		}()
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if t.Failed() {
			return
		}
	}
}
