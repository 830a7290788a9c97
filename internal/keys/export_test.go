package keys

// CacheLen reports how many derived keys p holds, for the bound test.
func CacheLen(p *Provider) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.cache)
}
