package s3

import (
	"context"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmw "github.com/aws/aws-sdk-go-v2/aws/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/facet-sds/facet/internal/storage"
)

// localityHeaders are the response headers of a HEAD that say something
// about where or how the backend keeps the object. User metadata
// (x-amz-meta-*) is Facet's own and stays out.
var localityHeaders = []string{
	"Server", "X-Amz-Storage-Class", "X-Amz-Replication-Status", "X-Amz-Server-Side-Encryption",
	"X-Amz-Version-Id", "X-Amz-Restore", "X-Amz-Archive-Status", "X-Amz-Object-Lock-Mode",
	"X-Amz-Id-2", "X-Amz-Request-Id",
}

// Locate tells where bucket/key's bytes are: the backend's endpoint, its
// bucket and key, and what a HEAD of the object tells. S3 does not expose
// which servers or disks hold an object; that stays the backend's business.
func (b *Backend) Locate(ctx context.Context, bucket, key string) (storage.Location, error) {
	full := b.objKey(bucket, key)
	out, err := b.head(ctx, full)
	if err != nil {
		return storage.Location{}, b.notFound(ctx, bucket, err)
	}
	r := &storage.RemoteLocation{
		Endpoint: b.endpoint, Bucket: b.bucket, Key: full,
		ETag: strings.Trim(aws.ToString(out.ETag), `"`), StorageClass: string(out.StorageClass),
		VersionID: aws.ToString(out.VersionId), ReplicationStatus: string(out.ReplicationStatus),
	}
	if raw, ok := awsmw.GetRawResponse(out.ResultMetadata).(*smithyhttp.Response); ok && raw.Response != nil {
		r.Server = raw.Header.Get("Server")
		r.Headers = pick(raw.Header)
	}
	return storage.Location{Kind: "s3", StoredSize: aws.ToInt64(out.ContentLength), Remote: r}, nil
}

func pick(h http.Header) map[string]string {
	out := map[string]string{}
	for _, name := range localityHeaders {
		if v := h.Get(name); v != "" {
			out[strings.ToLower(name)] = v
		}
	}
	return out
}
