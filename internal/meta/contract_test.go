package meta_test

import (
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/s3api"
)

// The Store, or the Cache in front of it, is what the server hands the S3
// front end. The guards live in a test so that meta itself does not link
// the front end (one-way floors).
var (
	_ s3api.Credentials = (*meta.Store)(nil)
	_ s3api.Buckets     = (*meta.Store)(nil)
	_ s3api.Credentials = (*meta.Cache)(nil)
	_ s3api.Buckets     = (*meta.Cache)(nil)
	_ meta.CacheStore   = (*meta.Store)(nil)
)
