package simulator_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payorch/shared/simulator"
)

func TestDeliverSignsAndRetriesUntilTwoHundred(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mac := hmac.New(sha256.New, []byte("whsec_x"))
		mac.Write([]byte(strconv.FormatInt(now.Unix(), 10) + "." + string(body)))
		if r.Header.Get("X-Id") != "n1" || r.Header.Get("X-Ts") != "1800000000" ||
			r.Header.Get("X-Sig") != "v1="+hex.EncodeToString(mac.Sum(nil)) || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("headers %v", r.Header)
		}
		if calls.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	n := simulator.Notifier{Headers: simulator.Headers{ID: "X-Id", Timestamp: "X-Ts", Signature: "X-Sig"}, Client: srv.Client(), Now: func() time.Time { return now }}

	var d simulator.Delivery
	if exhausted := n.Deliver(context.Background(), srv.URL, "n1", "whsec_x", []byte(`{"a":1}`), &d, 5, time.Millisecond); exhausted {
		t.Fatal("exhausted")
	}
	if d != (simulator.Delivery{Attempts: 3, StatusCode: http.StatusOK}) {
		t.Fatalf("delivery %+v", d)
	}

	// Attempts already made count towards upTo.
	calls.Store(0)
	d = simulator.Delivery{Attempts: 1}
	if exhausted := n.Deliver(context.Background(), srv.URL, "n1", "whsec_x", []byte(`{}`), &d, 2, time.Millisecond); !exhausted {
		t.Fatal("not exhausted")
	}
	if d != (simulator.Delivery{Attempts: 2, StatusCode: http.StatusServiceUnavailable}) {
		t.Fatalf("delivery %+v", d)
	}
}
