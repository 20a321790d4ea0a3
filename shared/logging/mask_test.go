package logging_test

import (
	"testing"

	"github.com/payorch/shared/logging"
)

func TestMaskPathSegment(t *testing.T) {
	const p = "/checkout/sessions/"
	for _, tc := range []struct{ in, want string }{
		{"/checkout/sessions/0b8e9f7a-1c2d-4e5f-8a9b-0c1d2e3f4a5b/fields", "/checkout/sessions/0b8e9f7a…/fields"},
		{"/checkout/sessions/0b8e9f7a-1c2d-4e5f-8a9b-0c1d2e3f4a5b", "/checkout/sessions/0b8e9f7a…"},
		{"/checkout/sessions/abc", "/checkout/sessions/…"},
		{"/checkout/sessions", "/checkout/sessions"},
		{"/checkout/sessions/", "/checkout/sessions/"},
		{"/transactions/0b8e9f7a-1c2d-4e5f-8a9b-0c1d2e3f4a5b", "/transactions/0b8e9f7a-1c2d-4e5f-8a9b-0c1d2e3f4a5b"},
	} {
		if got := logging.MaskPathSegment(tc.in, p); got != tc.want {
			t.Errorf("MaskPathSegment(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
