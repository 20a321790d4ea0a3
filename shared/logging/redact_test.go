package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

var testPANs = []string{
	"4111111111111111",
	"5555555555554444",
	"378282246310005",
	"4242424242424242",
	"4111 1111 1111 1111",
	"4111-1111-1111-1111",
	"6011111111111117",
	"3530111333300000",
	"600000000007", // 12 digits, the shortest (some Maestro)
}

type stringer struct{ s string }

func (s stringer) String() string { return "card " + s.s }

type valuer struct{ s string }

func (v valuer) LogValue() slog.Value { return slog.GroupValue(slog.String("number_text", v.s)) }

type order struct {
	ID   string
	Card struct{ Number string }
}

type byteName []byte

// logOne logs through the production stack and returns the line written.
func logOne(t *testing.T, f func(l *slog.Logger)) string {
	t.Helper()
	var buf bytes.Buffer
	f(New(&buf, slog.LevelDebug))
	if !json.Valid(buf.Bytes()) {
		t.Fatalf("invalid JSON line: %s", buf.String())
	}
	return buf.String()
}

func TestRedactingHandlerMasksPANs(t *testing.T) {
	placements := []struct {
		name string
		log  func(l *slog.Logger, pan string)
	}{
		{"message", func(l *slog.Logger, pan string) { l.Info("charging " + pan) }},
		{"string attr", func(l *slog.Logger, pan string) { l.Info("m", "card_info", pan) }},
		{"attr in group", func(l *slog.Logger, pan string) {
			l.Info("m", slog.Group("req", slog.Group("body", slog.String("raw", pan))))
		}},
		{"WithGroup", func(l *slog.Logger, pan string) { l.WithGroup("req").Info("m", "raw", pan) }},
		{"WithAttrs", func(l *slog.Logger, pan string) { l.With("raw", pan).Info("m") }},
		{"error", func(l *slog.Logger, pan string) {
			l.Info("m", "err", fmt.Errorf("upstream: %w", errors.New("bad card "+pan)))
		}},
		{"struct via %v", func(l *slog.Logger, pan string) {
			var o order
			o.ID, o.Card.Number = "ord_1", pan
			l.Info("m", "order", o)
		}},
		{"pointer to struct", func(l *slog.Logger, pan string) {
			o := &order{ID: "ord_1"}
			o.Card.Number = pan
			l.Info("m", "order", o)
		}},
		{"map", func(l *slog.Logger, pan string) { l.Info("m", "body", map[string]any{"n": pan}) }},
		{"bytes", func(l *slog.Logger, pan string) { l.Info("m", "body", []byte(`{"n":"`+pan+`"}`)) }},
		{"named bytes", func(l *slog.Logger, pan string) { l.Info("m", "body", byteName(pan)) }},
		{"raw json", func(l *slog.Logger, pan string) { l.Info("m", "body", json.RawMessage(`"`+pan+`"`)) }},
		{"runes", func(l *slog.Logger, pan string) { l.Info("m", "body", []rune(pan)) }},
		{"byte array", func(l *slog.Logger, pan string) {
			var a [19]byte
			copy(a[:], pan)
			l.Info("m", "body", a)
		}},
		{"stringer", func(l *slog.Logger, pan string) { l.Info("m", "card", stringer{pan}) }},
		{"log valuer", func(l *slog.Logger, pan string) { l.Info("m", "card", valuer{pan}) }},
		{"attr key", func(l *slog.Logger, pan string) { l.Info("m", pan, true) }},
		{"group name", func(l *slog.Logger, pan string) { l.WithGroup(pan).Info("m", "a", 1) }},
		{"context", func(l *slog.Logger, pan string) {
			l.InfoContext(context.Background(), "m", "raw", pan)
		}},
	}
	for _, pan := range testPANs {
		for _, p := range placements {
			t.Run(p.name+"/"+pan, func(t *testing.T) {
				line := logOne(t, func(l *slog.Logger) { p.log(l, pan) })
				if strings.Contains(joinDigitRuns(line), digitsOnly(pan)) {
					t.Fatalf("PAN survived: %s", line)
				}
				if !strings.Contains(line, PANReplacement) {
					t.Errorf("no %s marker: %s", PANReplacement, line)
				}
			})
		}
	}
}

func TestRedactingHandlerMasksNumbers(t *testing.T) {
	tests := []struct {
		name string
		attr slog.Attr
	}{
		{"int64", slog.Int64("n", 4111111111111111)},
		{"negative int64", slog.Int64("n", -5555555555554444)},
		{"uint64", slog.Uint64("n", 378282246310005)},
		{"float64", slog.Float64("n", 4242424242424242)},
		{"any int", slog.Any("n", 6011111111111117)},
		{"duration", slog.Duration("n", time.Duration(3530111333300000))},
		{"12-digit int64", slog.Int64("n", 600000000007)},
		{"12-digit uint64", slog.Uint64("n", 600000000007)},
		{"12-digit duration", slog.Duration("n", time.Duration(600000000007))},
		{"12-digit float64", slog.Float64("n", 600000000007)},
		{"a fraction's digits", slog.Float64("n", 0.4111111111111111)},
		{"a negative fraction's digits", slog.Float64("n", -0.4111111111111111)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := logOne(t, func(l *slog.Logger) { l.LogAttrs(context.Background(), slog.LevelInfo, "m", tt.attr) })
			var got map[string]any
			if err := json.Unmarshal([]byte(line), &got); err != nil {
				t.Fatal(err)
			}
			if got["n"] != PANReplacement {
				t.Errorf("n = %v, want %s (line %s)", got["n"], PANReplacement, line)
			}
		})
	}
}

// A byte or rune sequence nested in a value would be written by fmt as
// decimal numbers ("[52 49 49 49 ...]"), which the scanner cannot read but
// a person can: such a value is not written at all.
func TestRedactingHandlerHidesNestedByteSequences(t *testing.T) {
	const pan = "4111111111111111"
	b := []byte(pan)
	type request struct {
		Method string
		Body   []byte
	}
	type hidden struct{ body json.RawMessage }
	for _, tc := range []struct {
		name string
		v    any
	}{
		{"struct field", request{"POST", b}},
		{"unexported raw json field", hidden{json.RawMessage(pan)}},
		{"map of bytes", map[string][]byte{"body": b}},
		{"bytes in a slice of any", []any{"x", b}},
		{"pointer to bytes", &b},
		{"runes in a struct", struct{ R []rune }{[]rune(pan)}},
		{"bytes as a map key's array", map[[16]byte]int{[16]byte([]byte(pan)): 1}},
		{"pointer to struct", &request{"POST", b}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := logOne(t, func(l *slog.Logger) { l.Info("m", "v", tc.v) })
			if strings.Contains(line, "52 49 49 49") || strings.Contains(line, "1111") {
				t.Fatalf("the bytes were written: %s", line)
			}
			if !strings.Contains(line, "holding bytes, not logged") {
				t.Fatalf("no placeholder: %s", line)
			}
		})
	}
	// What fmt writes through a method, an empty sequence and a value
	// without any are written as before.
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"a Stringer field", struct{ S stringer }{stringer{"x"}}, "{S:card x}"},
		{"an empty byte slice", request{"GET", nil}, "{Method:GET Body:[]}"},
		{"numbers", struct{ N []int }{[]int{1, 2}}, "{N:[1 2]}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := logOne(t, func(l *slog.Logger) { l.Info("m", "v", tc.v) })
			if !strings.Contains(line, `"v":"`+tc.want+`"`) {
				t.Fatalf("want %s in %s", tc.want, line)
			}
		})
	}
}

func TestRedactingHandlerKeepsOrdinaryNumbers(t *testing.T) {
	tests := []struct {
		name, value string
	}{
		{"non-luhn 16 digits", "1234567890123456"},
		{"non-luhn visa-like", "4111111111111112"},
		{"order id", "9876543210987654"},
		{"ms timestamp", "1732258500123"},
		{"ns timestamp", "1732258500123456789"},
		{"rfc3339", "2024-11-22T06:55:12.123456789Z"},
		{"amount", "129900"},
		{"uuid", "7c0c4b8e-1d2f-4a3b-9c8d-0e1f2a3b4c5d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := logOne(t, func(l *slog.Logger) { l.Info("id "+tt.value, "id", tt.value) })
			if strings.Count(line, tt.value) != 2 || strings.Contains(line, PANReplacement) {
				t.Errorf("value altered: %s", line)
			}
		})
	}
	t.Run("int64", func(t *testing.T) {
		line := logOne(t, func(l *slog.Logger) { l.Info("m", "ts", int64(1732258500123456789)) })
		if !strings.Contains(line, `"ts":1732258500123456789`) {
			t.Errorf("number altered: %s", line)
		}
	})
}

func TestRedactingHandlerSecretKeys(t *testing.T) {
	tests := []struct {
		name   string
		log    func(l *slog.Logger)
		secret string
		key    string // the JSON key that must show SecretReplacement
	}{
		{"password", func(l *slog.Logger) { l.Info("m", "password", "hunter2") }, "hunter2", "password"},
		{"Authorization", func(l *slog.Logger) { l.Info("m", "Authorization", "Bearer abc.def") }, "abc.def", "Authorization"},
		{"in group", func(l *slog.Logger) {
			l.Info("m", slog.Group("headers", slog.String("Cookie", "sid=s3cr3t")))
		}, "s3cr3t", "Cookie"},
		{"WithAttrs", func(l *slog.Logger) { l.With("api_key", "k-s3cr3t").Info("m") }, "k-s3cr3t", "api_key"},
		{"secret group", func(l *slog.Logger) {
			l.Info("m", slog.Group("credentials", slog.String("user", "u-s3cr3t")))
		}, "u-s3cr3t", "credentials"},
		{"inside secret WithGroup", func(l *slog.Logger) {
			l.WithGroup("secrets").Info("m", "anything", "x-s3cr3t")
		}, "x-s3cr3t", "anything"},
		{"log valuer not resolved", func(l *slog.Logger) { l.Info("m", "cvv", valuer{"123"}) }, "123", "cvv"},
		{"number key", func(l *slog.Logger) { l.Info("m", "number", "1234") }, "1234", "number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := logOne(t, tt.log)
			// Not the time: its nanoseconds can hold any short secret
			// ("...454006123Z" holds the cvv 123).
			if rest := line[strings.Index(line, `"level"`):]; strings.Contains(rest, tt.secret) {
				t.Errorf("secret survived: %s", line)
			}
			if !strings.Contains(line, `"`+tt.key+`":"`+SecretReplacement+`"`) {
				t.Errorf("want %q redacted: %s", tt.key, line)
			}
		})
	}
}

type panicky struct{}

func (panicky) Error() string { panic("boom") }

func TestRedactingHandlerOddValues(t *testing.T) {
	tests := []struct {
		name string
		val  any
		want string
	}{
		{"nil", nil, `"v":"<nil>"`},
		{"panicking error", panicky{}, `"v":"%!v(PANIC=Error method: boom)"`},
		{"nil pointer", (*order)(nil), `"v":"<nil>"`},
		{"byte array", [4]byte{'a', 'b', 'c', 'd'}, `"v":"abcd"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := logOne(t, func(l *slog.Logger) { l.Info("m", "v", tt.val) })
			if !strings.Contains(line, tt.want) {
				t.Errorf("got %s, want it to contain %s", line, tt.want)
			}
		})
	}
}

type selfValuer struct{}

func (s selfValuer) LogValue() slog.Value { return slog.GroupValue(slog.Any("again", s)) }

func TestRedactingHandlerDeepRecursion(t *testing.T) {
	line := logOne(t, func(l *slog.Logger) { l.Info("m", "v", selfValuer{}) })
	if !strings.Contains(line, "[TOO DEEP]") {
		t.Errorf("recursion not bounded: %.200s", line)
	}
}

func TestNewRedactingHandlerIdempotent(t *testing.T) {
	h := NewRedactingHandler(slog.DiscardHandler)
	if NewRedactingHandler(h) != h {
		t.Error("wrapping twice should return the same handler")
	}
}

func BenchmarkLoggerClean(b *testing.B) {
	l := New(discard{}, slog.LevelInfo)
	ctx := context.Background()
	for b.Loop() {
		l.InfoContext(ctx, "payment authorized", "amount", 1299, "currency", "EUR", "id", "7c0c4b8e")
	}
}

func BenchmarkJSONHandlerBaseline(b *testing.B) {
	l := slog.New(slog.NewJSONHandler(discard{}, nil))
	ctx := context.Background()
	for b.Loop() {
		l.InfoContext(ctx, "payment authorized", "amount", 1299, "currency", "EUR", "id", "7c0c4b8e")
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// The key memo gives every logger derived from one handler the verdict a
// fresh judgement would, however often a key is logged, keeps no key that
// holds a card number, and stops growing at its bound.
func TestRedactingHandlerKeyMemo(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf, slog.LevelDebug).With("service", "test")
	pan := testPANs[0]
	for range 3 { // the first call judges, the later ones read the memo
		buf.Reset()
		l.WithGroup("g").Info("m", "password", "hunter2", "path", "/x", "k"+pan, "v")
		line := buf.String()
		if strings.Contains(line, "hunter2") || strings.Contains(line, pan) || !strings.Contains(line, `"path":"/x"`) ||
			!strings.Contains(line, `"password":"`+SecretReplacement+`"`) {
			t.Fatalf("line: %s", line)
		}
	}
	var km keyMemo
	for i := range maxMemoKeys + 50 {
		km.judge(fmt.Sprintf("key_%d", i))
	}
	km.judge("k" + pan)
	table := *km.table.Load()
	if len(table) != maxMemoKeys {
		t.Fatalf("memo holds %d keys, want the bound %d", len(table), maxMemoKeys)
	}
	for k := range table {
		if strings.Contains(k, pan) {
			t.Fatalf("memo kept a key with a card number")
		}
	}
	if v := km.judge("api_key"); !v.secret || v.key != "api_key" {
		t.Fatalf("past the bound: %+v", v)
	}
}

// A record with nothing to redact is passed on as it is, and any one thing
// to redact sends it down the full path: each row changes one attribute of
// a clean access line.
func TestRedactingHandlerCleanFastPath(t *testing.T) {
	pan := testPANs[1]
	tests := []struct {
		name    string
		msg     string
		attrs   []any
		want    string // must appear in the line
		notWant string // must not
	}{
		{"clean", "request", []any{"path", "/vault-forward", "status", 200, "duration", time.Millisecond}, `"path":"/vault-forward","status":200,"duration":1000000`, PANReplacement},
		{"card in a string", "request", []any{"path", "/cards/" + pan, "status", 200}, `"path":"/cards/` + PANReplacement, pan},
		{"card in the message", "request " + pan, []any{"status", 200}, `"msg":"request ` + PANReplacement, pan},
		{"secret key", "request", []any{"api_key", "k-123", "status", 200}, `"api_key":"` + SecretReplacement, "k-123"},
		{"card as an int", "request", []any{"n", int64(4111111111111111)}, `"n":"` + PANReplacement, "4111111111111111"},
		{"card as a duration", "request", []any{"d", time.Duration(4111111111111111)}, `"d":"` + PANReplacement, "4111111111111111"},
		{"card in a group", "request", []any{slog.Group("g", "v", pan)}, `"v":"` + PANReplacement, pan},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			line := logOne(t, func(l *slog.Logger) { l.Info(tc.msg, tc.attrs...) })
			if !strings.Contains(line, tc.want) || strings.Contains(line, tc.notWant) {
				t.Fatalf("line %s: want %q, not %q", line, tc.want, tc.notWant)
			}
		})
	}
}
