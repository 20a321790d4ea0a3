package forward

import "sync"

// buffer is a pooled scratch buffer for rendered bodies.
type buffer struct{ B []byte }

type pool struct{ p sync.Pool }

func (p *pool) Get() *buffer {
	if b, ok := p.p.Get().(*buffer); ok {
		return b
	}
	return &buffer{B: make([]byte, 0, 4096)}
}

func (p *pool) Put(b *buffer) {
	if cap(b.B) > 1<<20 { // do not keep huge buffers alive
		return
	}
	p.p.Put(b)
}

var bufPool = &pool{}
