package meta

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// On Redis each scope's counters are one hash, <prefix>usage:<scope>, with
// a field per counter and "q:<field>" per limit, outside the tables of
// redis.go: every PUT of a fleet charges them, and an optimistic
// transaction over a shared table hash would make those PUTs conflict with
// one another. A Lua script checks and applies a whole charge at once, as
// Redis runs scripts atomically.

var _ counterKV = (*redisKV)(nil)

func (r *redisKV) usageKey(s Scope) string { return r.prefix + "usage:" + s.key() }

// chargeScript: KEYS are the scopes' hashes; ARGV holds, per key, 1 when
// the charge settles (no limit applies) else 0, then per counter field (in
// counterFields order) the delta, the policy limit and the default limit. It returns {0} when applied, else {key index (1-based),
// field index (1-based), limit, used}.
var chargeScript = redis.NewScript(`
local fields = {'bytes', 'physical', 'objects', 'buckets', 'uploads'}
local nf = #fields
local stride = 1 + nf * 3
for i, k in ipairs(KEYS) do
  local settle = ARGV[(i - 1) * stride + 1] == '1'
  for j, f in ipairs(fields) do
    local base = (i - 1) * stride + 1 + (j - 1) * 3
    local d = tonumber(ARGV[base + 1])
    if d > 0 and not settle then
      local lim = tonumber(redis.call('HGET', k, 'q:' .. f) or '0')
      local pol = tonumber(ARGV[base + 2])
      if pol > 0 and (lim == 0 or pol < lim) then lim = pol end
      if lim == 0 then lim = tonumber(ARGV[base + 3]) end
      if lim > 0 then
        local used = tonumber(redis.call('HGET', k, f) or '0')
        if used + d > lim then return {i, j, lim, used} end
      end
    end
  end
end
for i, k in ipairs(KEYS) do
  for j, f in ipairs(fields) do
    local d = tonumber(ARGV[(i - 1) * stride + 1 + (j - 1) * 3 + 1])
    if d ~= 0 then redis.call('HINCRBY', k, f, d) end
  end
end
return {0}
`)

func (r *redisKV) charge(ctx context.Context, charges []Charge) error {
	keys := make([]string, len(charges))
	args := make([]any, 0, len(charges)*(1+len(counterFields)*3))
	for i, c := range charges {
		keys[i] = r.usageKey(c.Scope)
		settle := 0
		if c.Settle {
			settle = 1
		}
		args = append(args, settle)
		d, p, def := c.Delta.fields(), c.Policy.fields(), c.Default.fields()
		for j := range d {
			args = append(args, *d[j], *p[j], *def[j])
		}
	}
	res, err := chargeScript.Run(ctx, r.rdb, keys, args...).Int64Slice()
	if err != nil {
		return fmt.Errorf("meta: charge usage: redis: %w", err)
	}
	if len(res) == 4 && res[0] > 0 && int(res[0]) <= len(charges) && res[1] > 0 && int(res[1]) <= len(counterFields) {
		c := charges[res[0]-1]
		return &QuotaError{Scope: c.Scope, Field: counterFields[res[1]-1], Limit: res[2], Used: res[3], Want: *c.Delta.fields()[res[1]-1]}
	}
	if len(res) != 1 || res[0] != 0 {
		return fmt.Errorf("meta: charge usage: unexpected script answer %v", res)
	}
	return nil
}

func (r *redisKV) counters(ctx context.Context, scope Scope) (usage, limits Counters, err error) {
	m, err := r.rdb.HGetAll(ctx, r.usageKey(scope)).Result()
	if err != nil {
		return usage, limits, fmt.Errorf("redis HGETALL: %w", err)
	}
	u, l := usage.fields(), limits.fields()
	for j, f := range counterFields {
		if *u[j], err = parseCounter(m[f]); err != nil {
			return usage, limits, err
		}
		if *l[j], err = parseCounter(m["q:"+f]); err != nil {
			return usage, limits, err
		}
	}
	return usage, limits, nil
}

func parseCounter(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("malformed counter %q: %w", s, err)
	}
	return n, nil
}

func (r *redisKV) setCounters(ctx context.Context, scope Scope, usage, limits *Counters) error {
	var set []any
	if usage != nil {
		for j, v := range usage.fields() {
			set = append(set, counterFields[j], *v)
		}
	}
	if limits != nil {
		for j, v := range limits.fields() {
			set = append(set, "q:"+counterFields[j], *v)
		}
	}
	if len(set) == 0 {
		return nil
	}
	if err := r.rdb.HSet(ctx, r.usageKey(scope), set...).Err(); err != nil {
		return fmt.Errorf("redis HSET: %w", err)
	}
	return nil
}

func (r *redisKV) dropCounters(ctx context.Context, scope Scope) error {
	if err := r.rdb.Del(ctx, r.usageKey(scope)).Err(); err != nil {
		return fmt.Errorf("redis DEL: %w", err)
	}
	return nil
}
