package apierror

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestConstructors(t *testing.T) {
	tests := []struct {
		name   string
		err    *Error
		status int
		code   string
	}{
		{"bad request", BadRequest("x"), 400, "bad_request"},
		{"unauthorized", Unauthorized("x"), 401, "unauthorized"},
		{"forbidden", Forbidden("x"), 403, "forbidden"},
		{"not found", NotFound("x"), 404, "not_found"},
		{"method not allowed", MethodNotAllowed("x"), 405, "method_not_allowed"},
		{"duplicate record", DuplicateRecord("x", "id"), 409, "duplicate_record"},
		{"concurrent request", ConcurrentRequest("x"), 409, "concurrent_request"},
		{"too large", TooLarge("x"), 413, "too_large"},
		{"unsupported media type", UnsupportedMediaType("x"), 415, "unsupported_media_type"},
		{"unprocessable", Unprocessable("x"), 422, "unprocessable_entity"},
		{"idempotency key reused", IdempotencyKeyReused("x"), 422, "idempotency_key_reused"},
		{"too many requests", TooManyRequests("x"), 429, "too_many_requests"},
		{"internal", Internal(errors.New("x")), 500, "server_error"},
		{"bad gateway", BadGateway("x"), 502, "bad_gateway"},
		{"gateway timeout", GatewayTimeout("x"), 504, "gateway_timeout"},
		{"new", New(418, "teapot", "x"), 418, "teapot"},
		{"new default code", New(404, "", "x"), 404, "not_found"},
		{"new success status", New(200, "ok", "x"), 500, "server_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err.Status != tt.status || tt.err.Code != tt.code {
				t.Errorf("got %d %s, want %d %s", tt.err.Status, tt.err.Code, tt.status, tt.code)
			}
		})
	}
}

func TestJSONShape(t *testing.T) {
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{"no details is an empty array", NotFound("buyer not found"),
			`{"type":"error","code":"not_found","status":404,"message":"buyer not found","details":[]}`},
		{"default message", NotFound(""),
			`{"type":"error","code":"not_found","status":404,"message":"not found","details":[]}`},
		{"details", BadRequest("invalid request", Detail{
			Location: LocationBody, Pointer: "/display_name", Message: "too long", Type: "value_error.any_str.max_length",
		}), `{"type":"error","code":"bad_request","status":400,"message":"invalid request","details":[` +
			`{"location":"body","pointer":"/display_name","message":"too long","type":"value_error.any_str.max_length"}]}`},
		{"request id", Forbidden("missing scope").WithRequestID("req-1"),
			`{"type":"error","code":"forbidden","status":403,"message":"missing scope","details":[],"request_id":"req-1"}`},
		{"resource id", DuplicateRecord("exists", "b7f0"),
			`{"type":"error","code":"duplicate_record","status":409,"message":"exists","details":[],"resource_id":"b7f0"}`},
		{"internal hides cause", Internal(errors.New("pq: password authentication failed")),
			`{"type":"error","code":"server_error","status":500,"message":"internal server error","details":[]}`},
		{"escaping", BadRequest("a \"b\"\n<c>&\x01\u2028\xff"),
			`{"type":"error","code":"bad_request","status":400,"message":"a \"b\"\n\u003cc\u003e\u0026\u0001\u2028\ufffd","details":[]}`},
		{"card number in message", BadRequest("card 4111111111111111 declined"),
			`{"type":"error","code":"bad_request","status":400,"message":"card [REDACTED-PAN] declined","details":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(tt.err.JSON())
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			viaMarshal, err := json.Marshal(tt.err)
			if err != nil || string(viaMarshal) != got {
				t.Errorf("json.Marshal = %s, %v", viaMarshal, err)
			}
		})
	}
}

func TestAs(t *testing.T) {
	notFound := NotFound("buyer not found")
	tests := []struct {
		name      string
		err       error
		wantCode  string
		wantSame  *Error
		wantCause bool
	}{
		{"api error", notFound, CodeNotFound, notFound, false},
		{"wrapped api error", fmt.Errorf("lookup: %w", notFound), CodeNotFound, notFound, false},
		{"joined", errors.Join(errors.New("other"), notFound), CodeNotFound, notFound, false},
		{"plain error", errors.New("dial tcp 10.0.0.5:5432: connection refused"), CodeServerError, nil, true},
		{"typed nil api error", (*Error)(nil), CodeServerError, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := As(tt.err)
			if got.Code != tt.wantCode {
				t.Fatalf("code %s, want %s", got.Code, tt.wantCode)
			}
			if tt.wantSame != nil && got != tt.wantSame {
				t.Error("As did not return the wrapped *Error")
			}
			if tt.wantCause {
				if !errors.Is(got, tt.err) {
					t.Error("cause not kept for logging")
				}
				body := string(got.JSON())
				if msg := tt.err.Error(); strings.Contains(body, msg) || strings.Contains(got.Error(), msg) {
					t.Errorf("internal text leaked: %s / %s", body, got.Error())
				}
				if got.Message != "internal server error" {
					t.Errorf("message %q", got.Message)
				}
			}
		})
	}
	if As(nil) != nil {
		t.Error("As(nil) != nil")
	}
}

func TestWithCopies(t *testing.T) {
	base := BadRequest("x", Detail{Pointer: "/a"})
	withID := base.WithRequestID("r")
	more := base.WithDetails(Detail{Pointer: "/b"})
	if base.RequestID != "" || len(base.Details) != 1 {
		t.Error("With* modified the receiver")
	}
	if withID.RequestID != "r" || len(more.Details) != 2 {
		t.Error("With* lost data")
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		wantErr bool
	}{
		{"round trip", string(DuplicateRecord("x", "id-1").WithRequestID("r").JSON()), false},
		{"null details", `{"type":"error","code":"not_found","status":404,"message":"m","details":null}`, false},
		{"not json", `<html>`, true},
		{"wrong type", `{"type":"buyer","code":"x","status":400}`, true},
		{"no code", `{"type":"error","status":400}`, true},
		{"success status", `{"type":"error","code":"x","status":200}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.body))
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidEnvelope) {
					t.Errorf("err = %v, want ErrInvalidEnvelope", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Details == nil {
				t.Error("Details is nil")
			}
		})
	}
	got, _ := Parse(DuplicateRecord("x", "id-1").WithRequestID("r").JSON())
	if got.ResourceID != "id-1" || got.RequestID != "r" || got.Status != 409 {
		t.Errorf("round trip lost fields: %+v", got)
	}
}

func TestWrite(t *testing.T) {
	rec := httptest.NewRecorder()
	TooManyRequests("slow down").WithRequestID("r1").Write(rec)
	if rec.Code != http.StatusTooManyRequests {
		t.Errorf("status %d", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("content type %q", ct)
	}
	if !json.Valid(rec.Body.Bytes()) || !strings.Contains(rec.Body.String(), `"request_id":"r1"`) {
		t.Errorf("body %s", rec.Body.String())
	}
}

// FuzzJSON checks that the hand-written encoder agrees with encoding/json
// on arbitrary text.
func FuzzJSON(f *testing.F) {
	f.Add("msg", "/a", "m", "\x00\"\\<>&\u2028\xff")
	f.Fuzz(func(t *testing.T, msg, pointer, dmsg, id string) {
		e := BadRequest(msg, Detail{Location: LocationBody, Pointer: pointer, Message: dmsg, Type: "t"}).WithRequestID(id)
		got := e.JSON()
		if !json.Valid(got) {
			t.Fatalf("invalid JSON: %q", got)
		}
		want, err := json.Marshal(struct {
			Type       string   `json:"type"`
			Code       string   `json:"code"`
			Status     int      `json:"status"`
			Message    string   `json:"message"`
			Details    []Detail `json:"details"`
			RequestID  string   `json:"request_id,omitempty"`
			ResourceID string   `json:"resource_id,omitempty"`
		}{"error", e.Code, e.Status, redact(e.Message), []Detail{{
			redact(LocationBody), redact(pointer), redact(dmsg), "t",
		}}, redact(id), ""})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
}
