package outbound

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/valyala/fasthttp"
)

func startFastServer(b *testing.B) int {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString(`{"status":"ok"}`) }}
	go func() { _ = s.Serve(ln) }()
	b.Cleanup(func() { _ = s.Shutdown() })
	return ln.Addr().(*net.TCPAddr).Port
}

// BenchmarkForward compares a call through Client.Do with the same call on
// a bare fasthttp.Client (no checks): the difference is the per-request
// cost of the policy (URL and allow-list checks; addresses are checked
// only on new connections).
func BenchmarkForward(b *testing.B) {
	port := startFastServer(b)
	url := fmt.Sprintf("http://127.0.0.1:%d/v1/charges", port)
	body := []byte(`{"number":"4111111111111111","amount":100}`)

	b.Run("plain-fasthttp", func(b *testing.B) {
		fc := &fasthttp.Client{}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for pb.Next() {
				req.SetRequestURI(url)
				req.Header.SetMethod("POST")
				req.SetBody(body)
				if err := fc.Do(req, resp); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("outbound", func(b *testing.B) {
		c := mustNew(b, Policy{AllowLoopback: true, AllowedHosts: []string{hostPort(port)}})
		opts := CallOptions{AllowedHosts: []string{"api.processor.example", hostPort(port)}}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for pb.Next() {
				req.SetRequestURI(url)
				req.Header.SetMethod("POST")
				req.SetBody(body)
				if err := c.Do(context.Background(), req, resp, opts); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkCheckURI is the per-request pre-flight alone.
func BenchmarkCheckURI(b *testing.B) {
	c := mustNew(b, Policy{RequireHTTPS: true})
	opts := CallOptions{AllowedHosts: []string{"other.example", "api.processor.example"}}
	var req fasthttp.Request
	req.SetRequestURI("https://api.processor.example/v1/charges?x=1")
	u := req.URI()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.checkURI(u, &opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckURL is the pre-flight /vault-forward runs before it opens
// any card: both parsers and the checks.
func BenchmarkCheckURL(b *testing.B) {
	c := mustNew(b, Policy{RequireHTTPS: true})
	opts := CallOptions{AllowedHosts: []string{"other.example", "api.processor.example"}}
	b.ReportAllocs()
	for b.Loop() {
		if err := c.CheckURL("https://api.processor.example/v1/charges?x=1", opts); err != nil {
			b.Fatal(err)
		}
	}
}
