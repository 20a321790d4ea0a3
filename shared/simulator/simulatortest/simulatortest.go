// Package simulatortest holds what the sandbox simulators' tests share.
package simulatortest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// Call sends body (nil: none) as JSON to u with apiKey as its bearer key
// ("": no Authorization) and returns the answer's status and its JSON
// object (nil when it is not one).
func Call(t testing.TB, method, u, apiKey string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, u, rd)
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}
