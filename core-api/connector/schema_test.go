package connector_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
)

func TestSchemaValidate(t *testing.T) {
	schema := connector.Schema{
		{Name: "name", Kind: connector.KindString, Required: true, MaxLength: 5, Pattern: regexp.MustCompile(`^[a-z]+$`), PatternText: "lower-case letters"},
		{Name: "window", Kind: connector.KindInteger, Min: 1, Max: 30},
		{Name: "v10", Kind: connector.KindBoolean},
	}
	cases := []struct {
		name, raw string
		want      connector.Values
		pointers  []string
	}{
		{"all fields", `{"name":"abc","window":7,"v10":true}`, connector.Values{"name": "abc", "window": int64(7), "v10": true}, nil},
		{"optional fields absent", `{"name":"abc"}`, connector.Values{"name": "abc"}, nil},
		{"null is absent", `{"name":"abc","window":null}`, connector.Values{"name": "abc"}, nil},
		{"required missing", `{}`, connector.Values{}, []string{"/p/name"}},
		{"nothing given", ``, connector.Values{}, []string{"/p/name"}},
		{"not an object", `[1]`, connector.Values{}, []string{"/p"}},
		{"unknown key, escaped", `{"name":"abc","a/b~c":1}`, connector.Values{"name": "abc"}, []string{"/p/a~1b~0c"}},
		{"wrong kinds", `{"name":1,"window":"7","v10":"yes"}`, connector.Values{}, []string{"/p/name", "/p/v10", "/p/window"}},
		{"out of range", `{"name":"abcdef","window":31}`, connector.Values{}, []string{"/p/name", "/p/window"}},
		{"a fraction is no integer", `{"name":"abc","window":1.5}`, connector.Values{"name": "abc"}, []string{"/p/window"}},
		{"pattern", `{"name":"ABC"}`, connector.Values{}, []string{"/p/name"}},
		{"empty string", `{"name":""}`, connector.Values{}, []string{"/p/name"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var v coreapi.Problems
			got := schema.Validate("/p", json.RawMessage(tc.raw), &v)
			var ptrs []string
			for _, p := range v {
				ptrs = append(ptrs, p.Pointer)
			}
			slices.Sort(ptrs)
			if !slices.Equal(ptrs, tc.pointers) || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v %v, want %v %v", got, ptrs, tc.want, tc.pointers)
			}
		})
	}
}

// Credentials come out as secrets: printed, they say nothing.
func TestValidateSecretsRedacts(t *testing.T) {
	var v coreapi.Problems
	s := connector.MockCard{}.Schemas().Credentials.ValidateSecrets("/credentials", json.RawMessage(`{"api_key":"mc_test_hidden0value"}`), &v)
	if len(v) != 0 || s["api_key"].Reveal() != "mc_test_hidden0value" || !slices.Equal(s.Names(), []string{"api_key"}) {
		t.Fatalf("secrets %v %v", s.Names(), v)
	}
	for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
		if out := fmt.Sprintf(f, connector.Config{Credentials: s}); strings.Contains(out, "hidden0value") {
			t.Fatalf("%s prints the credential: %s", f, out)
		}
	}
	if out, _ := json.Marshal(s); strings.Contains(string(out), "hidden0value") {
		t.Fatalf("JSON carries the credential: %s", out)
	}
}
