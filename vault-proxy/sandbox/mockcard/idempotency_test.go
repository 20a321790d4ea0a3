package mockcard_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/payorch/vault-proxy/sandbox/mockcard"
)

// The same key and the same body (whatever its spacing and key order) is
// the stored answer, byte for byte, and no second charge; the same key
// with another body is 422; no key is 400.
func TestIdempotentAuthorization(t *testing.T) {
	s := start(t, mockcard.Config{})
	body := `{"amount":1299,"currency":"EUR","card":{"number":"4111111111111111","expiry_month":"12","expiry_year":"2031","security_code":"123"},"options":{"a":1,"b":[1,2]}}`
	reordered := "{\n \"currency\": \"EUR\", \"options\": {\"a\":1,\"b\":[1,2]}, \"capture\": false,\n \"card\": {\"expiry_year\":\"2031\",\"security_code\":\"123\",\"number\":\"4111111111111111\",\"expiry_month\":\"12\"}, \"amount\": 1299}"
	// vault-proxy gives a security code once: a connector sending its
	// request again cannot send the code again.
	withoutCode := `{"amount":1299,"currency":"EUR","card":{"number":"4111111111111111","expiry_month":"12","expiry_year":"2031"},"options":{"a":1,"b":[1,2]}}`

	code, first, h := s.call(t, http.MethodPost, "/v1/authorizations", "key-1", body)
	if code != http.StatusCreated || h.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %v %s", code, h, first)
	}
	for _, again := range []string{body, reordered, withoutCode} {
		code, raw, h := s.call(t, http.MethodPost, "/v1/authorizations", "key-1", again)
		if code != http.StatusCreated || !bytes.Equal(raw, first) || h.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %d %v\n%s\nwant\n%s", code, h, raw, first)
		}
	}
	if st := s.stats(t, "key-1"); st.Key.Charges != 1 || st.Key.Requests != 4 || st.Charges != 1 || st.Replays != 3 {
		t.Fatalf("stats: %+v %+v", st, *st.Key)
	}

	for name, other := range map[string]string{
		"another amount":  `{"amount":1300,"currency":"EUR","card":{"number":"4111111111111111","expiry_month":"12","expiry_year":"2031","security_code":"123"},"options":{"a":1,"b":[1,2]}}`,
		"another card":    `{"amount":1299,"currency":"EUR","card":{"number":"5555555555554444","expiry_month":"12","expiry_year":"2031","security_code":"123"},"options":{"a":1,"b":[1,2]}}`,
		"another option":  `{"amount":1299,"currency":"EUR","card":{"number":"4111111111111111","expiry_month":"12","expiry_year":"2031","security_code":"123"},"options":{"a":2,"b":[1,2]}}`,
		"capture at once": `{"amount":1299,"currency":"EUR","capture":true,"card":{"number":"4111111111111111","expiry_month":"12","expiry_year":"2031","security_code":"123"},"options":{"a":1,"b":[1,2]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			code, raw, _ := s.call(t, http.MethodPost, "/v1/authorizations", "key-1", other)
			apiError(t, code, raw, http.StatusUnprocessableEntity, "idempotency_key_reused")
		})
	}
	if st := s.stats(t, "key-1"); st.Key.Charges != 1 || st.Charges != 1 {
		t.Fatalf("a refused reuse charged: %+v", *st.Key)
	}

	// The lookup by key finds the authorization as it is now.
	code, raw, _ := s.call(t, http.MethodGet, "/v1/authorizations?idempotency_key=key-1", "", nil)
	if a, b := decode(t, raw), decode(t, first); code != http.StatusOK || a.ID != b.ID {
		t.Fatalf("lookup: %d %s", code, raw)
	}
	code, raw, _ = s.call(t, http.MethodGet, "/v1/authorizations?idempotency_key=never-used", "", nil)
	apiError(t, code, raw, http.StatusNotFound, "not_found")
}

// 100 identical requests at once: one charge, 100 identical answers.
func TestConcurrentDuplicatesChargeOnce(t *testing.T) {
	s := start(t, mockcard.Config{})
	const n = 100
	answers := make([][]byte, n)
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			codes[i], answers[i], _ = s.call(t, http.MethodPost, "/v1/authorizations", "concurrent", request(2500))
		})
	}
	wg.Wait()
	for i := range n {
		if codes[i] != http.StatusCreated || !bytes.Equal(answers[i], answers[0]) {
			t.Fatalf("answer %d: %d %s\nwant %s", i, codes[i], answers[i], answers[0])
		}
	}
	if st := s.stats(t, "concurrent"); st.Key.Charges != 1 || st.Key.Requests != n || st.Charges != 1 {
		t.Fatalf("stats: %+v %+v", st, *st.Key)
	}
}

// The processing amount records the charge and holds the answer longer
// than the client waits; the lookup by key then finds it, and the same
// request again answers at once with the stored answer.
func TestProcessingAmountRecordsTheChargeAndHoldsTheAnswer(t *testing.T) {
	s := start(t, mockcard.Config{Hold: time.Minute})
	impatient := &http.Client{Timeout: 300 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/v1/authorizations", bodyReader(t, request(mockcard.AmountHeld)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "slow")
	req.Header.Set("Authorization", "Bearer "+testAPIKey)
	if resp, err := impatient.Do(req); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		if resp != nil {
			resp.Body.Close()
		}
		t.Fatalf("the processing amount answered in time: %v", err)
	}

	code, raw, _ := s.call(t, http.MethodGet, "/v1/authorizations?idempotency_key=slow", "", nil)
	if a := decode(t, raw); code != http.StatusOK || a.Status != "authorized" || a.AuthorizedAmount != mockcard.AmountHeld || a.SchemeTransactionID == nil {
		t.Fatalf("lookup after the timeout: %d %s", code, raw)
	}
	begin := time.Now()
	code, again, h := s.call(t, http.MethodPost, "/v1/authorizations", "slow", request(mockcard.AmountHeld))
	if code != http.StatusCreated || h.Get("Idempotent-Replayed") != "true" || decode(t, again).ID != decode(t, raw).ID || time.Since(begin) > 5*time.Second {
		t.Fatalf("retry: %d %v %s", code, h, again)
	}
	if st := s.stats(t, "slow"); st.Key.Charges != 1 || st.Key.Requests != 2 {
		t.Fatalf("stats: %+v", *st.Key)
	}

	// A held answer does not keep the simulator from stopping.
	held := make(chan struct{})
	go func() {
		defer close(held)
		_, _, _ = s.call(t, http.MethodPost, "/v1/authorizations", "slow-2", request(mockcard.AmountHeld))
	}()
	time.Sleep(100 * time.Millisecond)
	begin = time.Now()
	if err := s.Close(); err != nil || time.Since(begin) > 5*time.Second {
		t.Fatalf("close with a held answer: %v after %v", err, time.Since(begin))
	}
	<-held
}

// The processor-error amount answers 500 and records nothing: the lookup
// finds nothing, and the same key may be sent again.
func TestProcessorErrorAmountRecordsNothing(t *testing.T) {
	s := start(t, mockcard.Config{})
	for range 2 {
		code, raw, _ := s.call(t, http.MethodPost, "/v1/authorizations", "boom", request(mockcard.AmountProcessorError))
		apiError(t, code, raw, http.StatusInternalServerError, "processor_error")
	}
	code, raw, _ := s.call(t, http.MethodGet, "/v1/authorizations?idempotency_key=boom", "", nil)
	apiError(t, code, raw, http.StatusNotFound, "not_found")
	if st := s.stats(t, "boom"); st.Key.Charges != 0 || st.Key.Requests != 2 || st.Charges != 0 {
		t.Fatalf("stats: %+v", *st.Key)
	}
	// The same key with another body is still a reuse.
	code, raw, _ = s.call(t, http.MethodPost, "/v1/authorizations", "boom", request(1000))
	apiError(t, code, raw, http.StatusUnprocessableEntity, "idempotency_key_reused")
}

// The simulator keeps at most MaxAuthorizations; the oldest are forgotten
// with their keys.
func TestStoredAuthorizationsAreBounded(t *testing.T) {
	s := start(t, mockcard.Config{MaxAuthorizations: 3})
	var ids []string
	for i := range 5 {
		ids = append(ids, s.authorize(t, "bounded-"+strconv.Itoa(i), request(1000)).ID)
	}
	for i, id := range ids {
		code, raw, _ := s.call(t, http.MethodGet, "/v1/authorizations/"+id, "", nil)
		if want := map[bool]int{true: 404, false: 200}[i < 2]; code != want {
			t.Fatalf("authorization %d: %d %s, want %d", i, code, raw, want)
		}
	}
	st := s.stats(t, "bounded-0")
	if st.StoredAuthorizations != 3 || st.ForgottenAuthorizations != 2 || st.Key.Requests != 0 {
		t.Fatalf("stats: %+v %+v", st, *st.Key)
	}
	// A forgotten key is a new request: a new charge.
	if a := s.authorize(t, "bounded-0", request(1000)); a.ID == ids[0] {
		t.Fatal("a forgotten authorization answered")
	}
}
