package auth

import (
	"container/list"
	"sync"
)

// lru is a bounded least-recently-used map from a token to the Principal it
// was verified as, and the KeySet it was verified against.
//
// It is keyed by the token itself: the map compares whole keys, so a hit is
// a token identical to one that passed every check, with no hash that could
// collide and none to compute per request (a SHA-256 of the ~700 bytes cost
// more than the rest of a cached verification). The price is memory: each
// entry keeps its token, at most MaxTokenLen bytes.
type lru struct {
	mu      sync.Mutex
	size    int
	order   *list.List // front: most recently used; values are *cacheEntry
	entries map[string]*list.Element
}

type cacheEntry struct {
	token string
	keys  *KeySet
	p     *Principal
}

func newLRU(size int) *lru {
	return &lru{size: size, order: list.New(), entries: make(map[string]*list.Element)}
}

// get returns the Principal cached for token if it was verified against
// keys. The caller must not modify it. token is only read, so it may alias
// a buffer the caller reuses.
func (c *lru) get(token string, keys *KeySet) (*Principal, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[token]
	if !ok {
		return nil, false
	}
	e := el.Value.(*cacheEntry)
	if e.keys != keys {
		c.removeElement(el)
		return nil, false
	}
	c.order.MoveToFront(el)
	return e.p, true
}

// add stores p, evicting the least recently used entry when full. token is
// kept, so it must not alias a buffer the caller reuses.
func (c *lru) add(token string, keys *KeySet, p *Principal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[token]; ok {
		el.Value = &cacheEntry{token: token, keys: keys, p: p}
		c.order.MoveToFront(el)
		return
	}
	for c.order.Len() >= c.size {
		c.removeElement(c.order.Back())
	}
	c.entries[token] = c.order.PushFront(&cacheEntry{token: token, keys: keys, p: p})
}

// remove drops token's entry; token is only read.
func (c *lru) remove(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[token]; ok {
		c.removeElement(el)
	}
}

// removeElement drops el; c.mu is held.
func (c *lru) removeElement(el *list.Element) {
	c.order.Remove(el)
	delete(c.entries, el.Value.(*cacheEntry).token)
}

func (c *lru) purge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order.Init()
	clear(c.entries)
}

func (c *lru) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
