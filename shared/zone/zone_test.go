package zone_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/payorch/shared/logging"
	"github.com/payorch/shared/zone"
)

// Each fixture must decode strictly into its type and encode back to the
// same JSON: a renamed or added field breaks this test on both sides.
func TestGoldenFixtures(t *testing.T) {
	for _, tc := range []struct {
		file string
		v    any
	}{
		{"card_metadata.json", &zone.CardMetadata{}},
		{"detokenize_request.json", &zone.DetokenizeRequest{}},
		{"detokenize_response.json", &zone.DetokenizeResponse{}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(tc.v); err != nil {
				t.Fatalf("decode: %v", err)
			}
			again, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			var a, b any
			_ = json.Unmarshal(raw, &a)
			_ = json.Unmarshal(again, &b)
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if !bytes.Equal(ja, jb) {
				t.Fatalf("round trip changed the fixture:\n%s\n%s", ja, jb)
			}
			if logging.ContainsPAN(string(raw)) {
				t.Fatal("a zone fixture holds a card number")
			}
		})
	}
}
