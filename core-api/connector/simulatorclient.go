package connector

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// simulatorClient is the HTTP exchange every sandbox simulator's
// connector makes: one authenticated JSON request to the simulator's
// base URL and its answer, read up to a limit. Each connector reads the
// answer's error shape of its own simulator's contract.
type simulatorClient struct {
	name          string        // the connector's, for errors
	baseURL       string        // the simulator's; a trailing slash is dropped
	authorization string        // the Authorization header's value
	http          *http.Client  // nil: a client with timeout
	timeout       time.Duration // the default client's
	maxAnswer     int64         // bytes of the answer read at most
}

// bearer is an Authorization header's value for an API key.
func bearer(key string) string { return "Bearer " + key }

// do sends body to path with extra headers and returns the answer's
// status and body; err is a call without an answer.
func (c simulatorClient) do(ctx context.Context, method, path string, body []byte, extra http.Header) (int, []byte, error) {
	if c.baseURL == "" {
		return 0, nil, fmt.Errorf("%s: no simulator URL configured", c.name)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.baseURL, "/")+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", c.authorization)
	req.Header.Set("Content-Type", "application/json")
	hc := c.http
	if hc == nil {
		hc = &http.Client{Timeout: c.timeout}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.maxAnswer))
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, b, nil
}

// callCoded is do for a simulator whose errors are {"error": code}: a
// 2xx answer is decoded into out; another is its status and code.
func (c simulatorClient) callCoded(ctx context.Context, method, path string, body []byte, out any) (int, string, error) {
	status, b, err := c.do(ctx, method, path, body, nil)
	if err != nil {
		return 0, "", err
	}
	if status/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		return status, e.Error, nil
	}
	return status, "", json.Unmarshal(b, out)
}
