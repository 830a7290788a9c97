// Package facetctx is the aws-sdk-go-v2 helper of Facet's application
// context (PAIO, FAST 2022: context propagation): code that runs inside a
// context block has its S3 requests carry x-facet-context, so that Facet
// classifies them (a compaction, a flush, an ETL step) without any other
// change to the calls themselves.
//
//	client := s3.NewFromConfig(cfg, facetctx.Option)
//	ctx = facetctx.With(ctx, facetctx.Block{Workflow: "etl-42", Class: "compaction"})
//	client.GetObject(ctx, ...) // sends x-facet-context: workflow=etl-42; class=compaction
//
// The header is added before signing, so it is signed like any other.
package facetctx

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Header is the request header Facet reads.
const Header = "X-Facet-Context"

// Block is an application context: the request class and the workflow
// (job) the requests belong to, plus any other key=value pairs.
type Block struct {
	Class    string
	Workflow string
	Other    map[string]string
}

// String renders the block as the header's value.
func (b Block) String() string {
	var parts []string
	if b.Workflow != "" {
		parts = append(parts, "workflow="+b.Workflow)
	}
	if b.Class != "" {
		parts = append(parts, "class="+b.Class)
	}
	for k, v := range b.Other {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, "; ")
}

type key struct{}

// With returns ctx inside the context block b: S3 calls made with it (by
// a client built with Option) carry b.
func With(ctx context.Context, b Block) context.Context { return context.WithValue(ctx, key{}, b) }

// From returns the block ctx is inside, if any.
func From(ctx context.Context) (Block, bool) {
	b, ok := ctx.Value(key{}).(Block)
	return b, ok
}

// Option installs the header on a client: s3.NewFromConfig(cfg,
// facetctx.Option) or per call as an extra option.
func Option(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, AddMiddleware)
}

// AddMiddleware adds the header-setting step to an SDK middleware stack
// (for clients of other services that reach Facet, or custom stacks).
func AddMiddleware(st *middleware.Stack) error {
	return st.Build.Add(middleware.BuildMiddlewareFunc("FacetContext",
		func(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
			if b, ok := From(ctx); ok {
				if req, ok := in.Request.(*smithyhttp.Request); ok {
					if v := b.String(); v != "" {
						req.Header.Set(Header, v)
					}
				}
			}
			return next.HandleBuild(ctx, in)
		}), middleware.After)
}
