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
	"github.com/facet-sds/facet/internal/tlsconf"
)

// client speaks the control API. It shares the wire types with the server
// (internal/admin), so the two cannot drift apart silently.
type client struct {
	base  string // e.g. http://127.0.0.1:9001, no trailing slash
	token string
	// keys, when set, sign every call as a tenant instead of the token
	// (sign.go).
	keys *tenantKeys
	hc   *http.Client
}

// requestTimeout bounds one API call; every call is a small metadata
// operation, so a slow answer means a stuck server.
const requestTimeout = 30 * time.Second

// newClient returns a client of the API at adminURL that signs its calls
// with keys when given, else sends the admin token. An https URL's server
// is verified against caFile's certificates when given, else the
// system's roots.
func newClient(adminURL, token string, keys *tenantKeys, caFile string) (*client, error) {
	u, err := url.Parse(adminURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--admin %q: want an http(s) URL such as http://127.0.0.1:9001", adminURL)
	}
	switch {
	case keys != nil && (keys.accessKey == "" || keys.secretKey == ""):
		return nil, errors.New("a tenant's credentials take both --access-key and --secret-key (or " + EnvAccessKey + " and " + EnvSecretKey + ")")
	case keys == nil && token == "":
		return nil, errors.New("no admin token: pass --token or set FACET_ADMIN_TOKEN (a tenant passes --access-key and --secret-key)")
	}
	hc := &http.Client{Timeout: requestTimeout}
	if caFile != "" {
		if u.Scheme != "https" {
			return nil, fmt.Errorf("--ca is for an https:// admin URL; %s is plain HTTP", u.Redacted())
		}
		cfg, err := tlsconf.ClientConfig(caFile)
		if err != nil {
			return nil, fmt.Errorf("--ca: %w", err)
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = cfg
		hc.Transport = tr
	}
	return &client{
		base:  strings.TrimSuffix(u.String(), "/"),
		token: token,
		keys:  keys,
		hc:    hc,
	}, nil
}

// apiBase is the API's path prefix on the server.
const apiBase = "/v1"

// apiError is an error answered by the server. A policy text that did not
// validate also brings its diagnostics.
type apiError struct {
	Status   int
	Code     string
	Message  string
	Errors   []admin.Diagnostic
	Warnings []admin.Diagnostic
}

func (e *apiError) Error() string { return fmt.Sprintf("%s (%s)", e.Message, e.Code) }

// do sends one request with an optional JSON body and decodes a JSON answer
// into out (nil: expect no body). Path segments must already be escaped.
func (c *client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := c.request(ctx, method, path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return c.send(req, out)
}

// doText sends text as a text/plain body.
func (c *client) doText(ctx context.Context, method, path, text string, out any) error {
	req, err := c.request(ctx, method, path, strings.NewReader(text))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	return c.send(req, out)
}

func (c *client) request(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+apiBase+path, body)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if c.keys == nil {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

func (c *client) send(req *http.Request, out any) error {
	if c.keys != nil {
		// Signed last: the caller may have set headers (Content-Type).
		if err := c.keys.sign(req); err != nil {
			return err
		}
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
		return c.answerError(resp, raw)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("admin API at %s: unexpected answer (%w): %s", c.base, err, snippet(raw))
	}
	return nil
}

// answerError is the error of an answer with a failure status and body
// raw: the API's JSON error when it is one.
func (c *client) answerError(resp *http.Response, raw []byte) error {
	var e admin.Error
	if json.Unmarshal(raw, &e) == nil && e.Code != "" {
		return &apiError{Status: resp.StatusCode, Code: e.Code, Message: e.Error, Errors: e.Errors, Warnings: e.Warnings}
	}
	return fmt.Errorf("admin API at %s answered %s: %s", c.base, resp.Status, snippet(raw))
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

func (c *client) setTenant(ctx context.Context, name string, set admin.TenantSettings) (admin.Tenant, error) {
	var out admin.Tenant
	err := c.do(ctx, http.MethodPatch, "/tenants/"+seg(name), set, &out)
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

func (c *client) dataKeys(ctx context.Context, tenant string) (admin.DataKeys, error) {
	var out admin.DataKeys
	err := c.do(ctx, http.MethodGet, "/tenants/"+seg(tenant)+"/data-keys", nil, &out)
	return out, err
}

func (c *client) rotateDataKey(ctx context.Context, tenant string) (admin.DataKeys, error) {
	var out admin.DataKeys
	err := c.do(ctx, http.MethodPost, "/tenants/"+seg(tenant)+"/keys:rotate-data-key", nil, &out)
	return out, err
}

func (c *client) tenantUsage(ctx context.Context, tenant string) (admin.TenantUsage, error) {
	var out admin.TenantUsage
	err := c.do(ctx, http.MethodGet, "/tenants/"+seg(tenant)+"/usage", nil, &out)
	return out, err
}

func (c *client) createGroup(ctx context.Context, name string, members []string) (admin.Group, error) {
	var out admin.Group
	err := c.do(ctx, http.MethodPost, "/groups", admin.CreateGroupRequest{Name: name, Members: members}, &out)
	return out, err
}

func (c *client) listGroups(ctx context.Context) (admin.GroupList, error) {
	var out admin.GroupList
	err := c.do(ctx, http.MethodGet, "/groups", nil, &out)
	return out, err
}

func (c *client) getGroup(ctx context.Context, name string) (admin.Group, error) {
	var out admin.Group
	err := c.do(ctx, http.MethodGet, "/groups/"+seg(name), nil, &out)
	return out, err
}

func (c *client) deleteGroup(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/groups/"+seg(name), nil, nil)
}

func (c *client) addGroupMembers(ctx context.Context, name string, members []string) (admin.Group, error) {
	var out admin.Group
	err := c.do(ctx, http.MethodPost, "/groups/"+seg(name)+"/members", admin.GroupMembersRequest{Members: members}, &out)
	return out, err
}

func (c *client) removeGroupMembers(ctx context.Context, name string, members []string) (admin.Group, error) {
	var out admin.Group
	err := c.do(ctx, http.MethodPost, "/groups/"+seg(name)+"/members:remove", admin.GroupMembersRequest{Members: members}, &out)
	return out, err
}

func (c *client) applyPolicies(ctx context.Context, text string) (admin.PolicyApplied, error) {
	var out admin.PolicyApplied
	err := c.doText(ctx, http.MethodPost, "/policies", text, &out)
	return out, err
}

func (c *client) validatePolicies(ctx context.Context, text string) (admin.ValidateResult, error) {
	var out admin.ValidateResult
	err := c.doText(ctx, http.MethodPost, "/policies:validate", text, &out)
	return out, err
}

func (c *client) listPolicies(ctx context.Context) (admin.PolicyList, error) {
	var out admin.PolicyList
	err := c.do(ctx, http.MethodGet, "/policies", nil, &out)
	return out, err
}

func (c *client) getPolicy(ctx context.Context, id string) (admin.Policy, error) {
	var out admin.Policy
	err := c.do(ctx, http.MethodGet, "/policies/"+seg(id), nil, &out)
	return out, err
}

func (c *client) deletePolicy(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/policies/"+seg(id), nil, nil)
}

func (c *client) explain(ctx context.Context, q url.Values) (admin.Explanation, error) {
	var out admin.Explanation
	err := c.do(ctx, http.MethodGet, "/explain?"+q.Encode(), nil, &out)
	return out, err
}

func (c *client) getFilter(ctx context.Context, name string) (admin.FilterInfo, error) {
	var out admin.FilterInfo
	err := c.do(ctx, http.MethodGet, "/filters/"+seg(name), nil, &out)
	return out, err
}
