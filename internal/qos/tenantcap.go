package qos

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/facet-sds/facet/internal/admit"
)

// TenantCap caps each tenant's S3 requests in flight on this gateway, in
// front of the QoS stages: a connection belongs to no tenant until a
// request on it is authenticated, so what one tenant can hold is its
// authenticated requests, and past the cap the next one is refused with
// 503 SlowDown, leaving the gateway's other tenants their share.
type TenantCap struct {
	next admit.QoS
	max  int
	// refused is told of each refusal (the Prometheus counter); may be nil.
	refused func(tenant string)

	mu       sync.Mutex
	inFlight map[string]int
}

// NewTenantCap caps each tenant at max requests in flight (max <= 0: no
// cap), passing admitted requests to next (nil: no further stage).
func NewTenantCap(next admit.QoS, max int, refused func(tenant string)) *TenantCap {
	return &TenantCap{next: next, max: max, refused: refused, inFlight: map[string]int{}}
}

// capRetry is how long a refused client is told to wait.
const capRetry = time.Second

// ErrTenantBusy refuses a request over its tenant's cap; it carries a
// Retry-After, so the front end answers 503 SlowDown.
type ErrTenantBusy struct {
	Tenant string
	Max    int
}

func (e ErrTenantBusy) Error() string {
	return fmt.Sprintf("tenant %s has %d requests in flight on this gateway, its cap (--tenant-max-connections)", e.Tenant, e.Max)
}

// RetryAfter is when the client may try again.
func (ErrTenantBusy) RetryAfter() time.Duration { return capRetry }

// Admit counts the request against its tenant's cap, then passes it on.
func (c *TenantCap) Admit(ctx context.Context, tenant, method string) (admit.Shaper, error) {
	if c.max > 0 {
		c.mu.Lock()
		if c.inFlight[tenant] >= c.max {
			c.mu.Unlock()
			if c.refused != nil {
				c.refused(tenant)
			}
			return nil, ErrTenantBusy{Tenant: tenant, Max: c.max}
		}
		c.inFlight[tenant]++
		c.mu.Unlock()
	}
	var sh admit.Shaper = passThrough{}
	if c.next != nil {
		var err error
		if sh, err = c.next.Admit(ctx, tenant, method); err != nil {
			c.release(tenant)
			return nil, err
		}
	}
	return &cappedShaper{Shaper: sh, done: func() { c.release(tenant) }}, nil
}

// InFlight is the tenant's requests in flight.
func (c *TenantCap) InFlight(tenant string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inFlight[tenant]
}

func (c *TenantCap) release(tenant string) {
	if c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inFlight[tenant]--; c.inFlight[tenant] <= 0 {
		delete(c.inFlight, tenant)
	}
}

// cappedShaper releases the request's place once, when it ends.
type cappedShaper struct {
	admit.Shaper
	once sync.Once
	done func()
}

func (s *cappedShaper) Done() {
	s.Shaper.Done()
	s.once.Do(s.done)
}

// passThrough shapes nothing (QoS off): the stream and the response keep
// their own fast paths.
type passThrough struct{}

func (passThrough) Reader(r io.Reader) io.Reader { return r }
func (passThrough) Writer(w io.Writer) io.Writer { return w }
func (passThrough) Done()                        {}
