package auth

import (
	"container/list"
	"crypto/sha256"
	"sync"
)

// lru is a bounded least-recently-used map from the SHA-256 of a token to
// the Principal it was verified as, and the KeySet it was verified against.
type lru struct {
	mu      sync.Mutex
	size    int
	order   *list.List // front: most recently used; values are *cacheEntry
	entries map[[sha256.Size]byte]*list.Element
}

type cacheEntry struct {
	sum  [sha256.Size]byte
	keys *KeySet
	p    *Principal
}

func newLRU(size int) *lru {
	return &lru{size: size, order: list.New(), entries: make(map[[sha256.Size]byte]*list.Element)}
}

// get returns the Principal cached for sum if it was verified against keys.
// The caller must not modify it.
func (c *lru) get(sum [sha256.Size]byte, keys *KeySet) (*Principal, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[sum]
	if !ok {
		return nil, false
	}
	e := el.Value.(*cacheEntry)
	if e.keys != keys {
		c.order.Remove(el)
		delete(c.entries, sum)
		return nil, false
	}
	c.order.MoveToFront(el)
	return e.p, true
}

// add stores p, evicting the least recently used entry when full.
func (c *lru) add(sum [sha256.Size]byte, keys *KeySet, p *Principal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[sum]; ok {
		el.Value = &cacheEntry{sum: sum, keys: keys, p: p}
		c.order.MoveToFront(el)
		return
	}
	for c.order.Len() >= c.size {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*cacheEntry).sum)
	}
	c.entries[sum] = c.order.PushFront(&cacheEntry{sum: sum, keys: keys, p: p})
}

func (c *lru) remove(sum [sha256.Size]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[sum]; ok {
		c.order.Remove(el)
		delete(c.entries, sum)
	}
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
