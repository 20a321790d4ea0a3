package envelope

import (
	"container/list"
	"crypto/cipher"
	"sync"
	"time"
)

// recordCache keeps the AEADs of recently opened records so that opening a
// hot record again costs one AES-GCM open instead of an unwrap plus a key
// schedule. It is bounded in size, age and use count like the data key
// cache, keyed by the record's wrapped key (unique per record), and entries
// are dropped when their record is deleted. A cache hit still authenticates
// the ciphertext against the row's associated data, so a copied row fails
// exactly as it does on a miss.
type recordCache struct {
	mu      sync.Mutex
	size    int
	maxAge  time.Duration
	maxUses int
	ll      *list.List
	items   map[string]*list.Element
	// drops counts forgets and purges. An open that missed notes it and
	// caches the key it then unwrapped only if it has not moved: a record
	// forgotten while its open was under way has been deleted, and its key
	// must not come back (the idea of vaulting's row cache).
	drops uint64
}

type recordEntry struct {
	key     string
	raw     []byte
	aead    cipher.AEAD
	expires time.Time
	uses    int
}

func newRecordCache(size int, maxAge time.Duration, maxUses int) *recordCache {
	return &recordCache{size: size, maxAge: maxAge, maxUses: maxUses, ll: list.New(), items: map[string]*list.Element{}}
}

// get returns the record's cached AEAD or, on a miss, nil and the drop
// count that the put after the miss must be given.
func (c *recordCache) get(wrapped []byte, now time.Time) (cipher.AEAD, uint64) {
	if c.size <= 0 {
		return nil, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[string(wrapped)]
	if !ok {
		return nil, c.drops
	}
	e := el.Value.(*recordEntry)
	if e.uses >= c.maxUses || !now.Before(e.expires) {
		c.removeLocked(el)
		return nil, c.drops
	}
	e.uses++
	c.ll.MoveToFront(el)
	return e.aead, 0
}

// put takes ownership of raw and zeroes it on eviction. since is what get
// returned on the miss: if a forget or purge came after it, the key is
// zeroed instead of cached.
func (c *recordCache) put(wrapped, raw []byte, aead cipher.AEAD, now time.Time, since uint64) {
	if c.size <= 0 {
		clear(raw)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.drops != since {
		clear(raw)
		return
	}
	if el, ok := c.items[string(wrapped)]; ok {
		c.removeLocked(el)
	}
	e := &recordEntry{key: string(wrapped), raw: raw, aead: aead, expires: now.Add(c.maxAge), uses: 1}
	c.items[e.key] = c.ll.PushFront(e)
	for c.ll.Len() > c.size {
		c.removeLocked(c.ll.Back())
	}
}

func (c *recordCache) dropCount() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.drops
}

func (c *recordCache) forget(wrapped []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drops++
	if el, ok := c.items[string(wrapped)]; ok {
		c.removeLocked(el)
	}
}

func (c *recordCache) purge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drops++
	for c.ll.Len() > 0 {
		c.removeLocked(c.ll.Back())
	}
}

func (c *recordCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

func (c *recordCache) removeLocked(el *list.Element) {
	e := el.Value.(*recordEntry)
	c.ll.Remove(el)
	delete(c.items, e.key)
	clear(e.raw)
}
