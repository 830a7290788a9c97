package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/facet-sds/facet/internal/admin"
)

// client speaks the control API. It shares the wire types with the server
// (internal/admin), so the two cannot drift apart silently.
type client struct {
	base  string // e.g. http://127.0.0.1:9001, no trailing slash
	token string
	hc    *http.Client
}

// requestTimeout bounds one API call; every call is a small metadata
// operation, so a slow answer means a stuck server.
const requestTimeout = 30 * time.Second

func newClient(adminURL, token string) (*client, error) {
	u, err := url.Parse(adminURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--admin %q: want an http(s) URL such as http://127.0.0.1:9001", adminURL)
	}
	if token == "" {
		return nil, errors.New("no admin token: pass --token or set FACET_ADMIN_TOKEN")
	}
	return &client{
		base:  strings.TrimSuffix(u.String(), "/"),
		token: token,
		hc:    &http.Client{Timeout: requestTimeout},
	}, nil
}

// apiError is an error answered by the server.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string { return fmt.Sprintf("%s (%s)", e.Message, e.Code) }

// do sends one request and decodes a JSON answer into out (nil: expect no
// body). Path segments must already be escaped.
func (c *client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+"/api/v1"+path, body)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("admin API at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	// Answers are small; the limit guards against pointing --admin at
	// something that is not a Facet admin API.
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("admin API at %s: read answer: %w", c.base, err)
	}
	if resp.StatusCode >= 300 {
		var e admin.Error
		if json.Unmarshal(raw, &e) == nil && e.Code != "" {
			return &apiError{Status: resp.StatusCode, Code: e.Code, Message: e.Error}
		}
		return fmt.Errorf("admin API at %s answered %s: %s", c.base, resp.Status, snippet(raw))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("admin API at %s: unexpected answer (%w): %s", c.base, err, snippet(raw))
	}
	return nil
}

func snippet(b []byte) string {
	const n = 200
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}

func seg(s string) string { return url.PathEscape(s) }

func (c *client) createTenant(ctx context.Context, name string) (admin.Credentials, error) {
	var out admin.Credentials
	err := c.do(ctx, http.MethodPost, "/tenants", admin.CreateTenantRequest{Name: name}, &out)
	return out, err
}

func (c *client) listTenants(ctx context.Context) (admin.TenantList, error) {
	var out admin.TenantList
	err := c.do(ctx, http.MethodGet, "/tenants", nil, &out)
	return out, err
}

func (c *client) getTenant(ctx context.Context, name string) (admin.Tenant, error) {
	var out admin.Tenant
	err := c.do(ctx, http.MethodGet, "/tenants/"+seg(name), nil, &out)
	return out, err
}

func (c *client) deleteTenant(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/tenants/"+seg(name), nil, nil)
}

func (c *client) createKey(ctx context.Context, tenant string) (admin.Credentials, error) {
	var out admin.Credentials
	err := c.do(ctx, http.MethodPost, "/tenants/"+seg(tenant)+"/keys", nil, &out)
	return out, err
}

func (c *client) listKeys(ctx context.Context, tenant string) (admin.KeyList, error) {
	var out admin.KeyList
	err := c.do(ctx, http.MethodGet, "/tenants/"+seg(tenant)+"/keys", nil, &out)
	return out, err
}

func (c *client) revokeKey(ctx context.Context, tenant, accessKey string) error {
	return c.do(ctx, http.MethodDelete, "/tenants/"+seg(tenant)+"/keys/"+seg(accessKey), nil, nil)
}

func (c *client) listBuckets(ctx context.Context, tenant string) (admin.BucketList, error) {
	var out admin.BucketList
	err := c.do(ctx, http.MethodGet, "/tenants/"+seg(tenant)+"/buckets", nil, &out)
	return out, err
}
