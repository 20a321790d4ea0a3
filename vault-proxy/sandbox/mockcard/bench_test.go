package mockcard_test

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/payorch/vault-proxy/sandbox/mockcard"
)

// BenchmarkAuthorizeAndCapture is one create-and-capture pair per
// iteration over loopback HTTP, from parallel clients: the pair the
// product's benchmark sends through vault-proxy.
func BenchmarkAuthorizeAndCapture(b *testing.B) {
	s := start(b, mockcard.Config{MaxAuthorizations: 1_000_000})
	s.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := "bench-" + strconv.FormatInt(n.Add(1), 10)
			code, raw, _ := s.call(b, http.MethodPost, "/v1/authorizations", key, request(1299))
			if code != http.StatusCreated {
				b.Fatalf("authorize: %d %s", code, raw)
			}
			id := decode(b, raw).ID
			if code, raw, _ = s.call(b, http.MethodPost, "/v1/authorizations/"+id+"/captures", key, nil); code != http.StatusOK {
				b.Fatalf("capture: %d %s", code, raw)
			}
		}
	})
}
