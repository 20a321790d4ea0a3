package apierror_test

import (
	"testing"

	"github.com/payorch/shared/apierror"
)

func TestCheckJSONContentType(t *testing.T) {
	for ct, ok := range map[string]bool{
		"application/json": true, "application/json; charset=UTF-8": true, "application/merge-patch+json": true,
		"": false, "text/plain": false, "application/json; charset=latin1": false, "application/jsonx": false, "json": false,
	} {
		err := apierror.CheckJSONContentType(ct)
		if (err == nil) != ok || (err != nil && apierror.As(err).Status != 415) {
			t.Errorf("%q: %v, want ok=%v", ct, err, ok)
		}
	}
}

func TestPointerToken(t *testing.T) {
	for in, want := range map[string]string{"a": "a", "a/b": "a~1b", "a~b": "a~0b", "~/": "~0~1"} {
		if got := apierror.PointerToken(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
