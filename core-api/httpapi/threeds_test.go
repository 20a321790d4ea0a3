package httpapi_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/payorch/core-api/httpapi"
)

// Without the simulator's rule book (production) no scenario route
// exists: each is 404, whatever its method.
func TestThreeDSScenarioRoutesAbsentInProduction(t *testing.T) {
	rt := httpapi.NewRouter(slog.New(slog.DiscardHandler))
	httpapi.Routes(rt, httpapi.Deps{})
	const id = "00000000-0000-4000-8000-000000000000"
	for _, r := range []struct{ method, path string }{
		{http.MethodPost, "/three-ds-scenarios"},
		{http.MethodGet, "/three-ds-scenarios"},
		{http.MethodGet, "/three-ds-scenarios/" + id},
		{http.MethodPut, "/three-ds-scenarios/" + id},
		{http.MethodDelete, "/three-ds-scenarios/" + id},
		{http.MethodPost, "/three-ds-scenarios/" + id + "/move"},
	} {
		rec := httptest.NewRecorder()
		rt.ServeHTTP(rec, httptest.NewRequest(r.method, r.path, strings.NewReader(`{}`)))
		if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `"not_found"`) {
			t.Errorf("%s %s = %d %s", r.method, r.path, rec.Code, rec.Body)
		}
	}
}
