package signing

import (
	"net/http"
	"strings"
	"testing"
)

func TestDerivedComponents(t *testing.T) {
	tests := []struct {
		url  string
		want map[string]string
	}{
		{
			url: "https://Example.COM:443/a/b?x=1&y=%20z#frag",
			want: map[string]string{
				"@method":         "POST",
				"@target-uri":     "https://Example.COM:443/a/b?x=1&y=%20z",
				"@authority":      "example.com",
				"@scheme":         "https",
				"@request-target": "/a/b?x=1&y=%20z",
				"@path":           "/a/b",
				"@query":          "?x=1&y=%20z",
			},
		},
		{
			url: "http://h.example:8080",
			want: map[string]string{
				"@target-uri":     "http://h.example:8080",
				"@authority":      "h.example:8080",
				"@scheme":         "http",
				"@request-target": "/",
				"@path":           "/",
				"@query":          "?",
			},
		},
		{
			url: "HTTP://user:pw@h.example:80/p?",
			want: map[string]string{
				"@authority":      "h.example",
				"@scheme":         "http",
				"@request-target": "/p?",
				"@path":           "/p",
				"@query":          "?",
			},
		},
		{
			url: "https://[::1]:8443/%7Euser/a%2Fb",
			want: map[string]string{
				"@authority": "[::1]:8443",
				"@path":      "/%7Euser/a%2Fb", // raw bytes, not re-escaped
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			tg, err := parseTarget(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			req := &Request{Method: "POST", URL: tc.url, Header: http.Header{}}
			for name, want := range tc.want {
				got, err := componentValue(req, tg, name, nil)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
		})
	}
}

func TestParseTargetRejects(t *testing.T) {
	for _, u := range []string{"", "/relative?x", "example.com/x", "https:///nohost", "://x"} {
		if _, err := parseTarget(u); err == nil {
			t.Errorf("parseTarget(%q) accepted", u)
		}
	}
}

func TestFieldValues(t *testing.T) {
	h := http.Header{}
	h.Add("X-Multi", "  a ")
	h.Add("X-Multi", "\tb,c\t")
	h.Add("X-Empty", "")
	h.Set("X-Nl", "a\nb")
	req := &Request{Method: "GET", URL: "https://h/", Header: h}
	tg, _ := parseTarget(req.URL)
	tests := []struct {
		name, want string
		wantErr    bool
	}{
		{name: "x-multi", want: "a, b,c"},
		{name: "x-empty", want: ""},
		{name: "x-absent", wantErr: true},
	}
	for _, tc := range tests {
		got, err := componentValue(req, tg, tc.name, nil)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s = %q, %v; want %q, error %v", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
	// The header itself is not modified by the trimming.
	if v := h.Values("X-Multi"); v[0] != "  a " {
		t.Errorf("header changed to %q", v)
	}
	if _, _, err := signatureBase(req, []string{"x-nl"}, params{created: 1}.sfv(), nil); err == nil || !strings.Contains(err.Error(), "line break") {
		t.Errorf("value with a newline: %v", err)
	}
}

func TestNormalizeCovered(t *testing.T) {
	tests := []struct {
		in      []string
		want    string
		wantErr bool
	}{
		{in: []string{"@Method", "Content-Type", "x-a"}, want: "@method content-type x-a"},
		{in: []string{"@status"}, wantErr: true},
		{in: []string{"@query-param"}, wantErr: true},
		{in: []string{"@signature-params"}, wantErr: true},
		{in: []string{"date", "Date"}, wantErr: true},
		{in: []string{`"date"`}, wantErr: true},
		{in: []string{"x;y"}, wantErr: true},
	}
	for _, tc := range tests {
		got, err := normalizeCovered(tc.in)
		if (err != nil) != tc.wantErr || strings.Join(got, " ") != tc.want {
			t.Errorf("normalizeCovered(%q) = %q, %v", tc.in, got, err)
		}
	}
}
