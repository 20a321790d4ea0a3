package forward

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/auditspool"
	"github.com/payorch/vault-proxy/vaulting"
)

// shelving keeps every record in the spool: the benchmark measures the
// request path, not the shipper.
type shelving struct{}

func (shelving) AuditCheckpoint(context.Context, uuid.UUID) (uint64, error) { return 0, nil }
func (shelving) ShipAudit(context.Context, uuid.UUID, auditspool.Batch) error {
	return errors.New("shelved")
}

// BenchmarkAuditOutcome is what a /vault-forward pays for its audit
// record: the detail Send builds and AuditOutcome's spooling of it.
func BenchmarkAuditOutcome(b *testing.B) {
	s, err := auditspool.Open(b.TempDir(), shelving{}, auditspool.Options{RetryMin: time.Hour, DrainTimeout: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	e := &Engine{Vaulting: vaulting.New(nil, s, nil, nil, nil, nil)}
	ctx := context.Background()
	u, _ := url.Parse("https://127.0.0.1:8443/pay")
	r := Request{
		Caller: vaulting.Caller{MerchantAccountID: "default", Actor: "0192f1c4-7a3e-7d2b-9c1f-4e5a6b7c8d9e", RequestID: "req-0192f1c4"},
		Action: "forward", Purpose: "vault-forward", Method: "POST", URL: u,
		Tokens: []uuid.UUID{uuid.New(), uuid.New()},
		Audit:  map[string]any{"authentications": []string{uuid.NewString()}},
	}
	names := []string{"CARD_NUMBER_1", "CARD_EXPIRATION_DATE_MM_1", "CARD_EXPIRATION_DATE_YY_1", "CARD_SECURITY_CODE_1"}
	b.ReportAllocs()
	for b.Loop() {
		e.auditOutcome(ctx, nil, &r, "success", names, 3*time.Millisecond, 200, "")
	}
}

// details is an audit log that keeps each event's detail as encoded when
// it was recorded.
type details []string

func (d *details) Record(_ context.Context, e vaultproxy.AuditEvent) error {
	b, err := json.Marshal(e.Detail)
	*d = append(*d, string(b))
	return err
}

func (*details) Reserve(vaultproxy.AuditEvent) (vaultproxy.AuditReservation, error) {
	return nil, errors.New("details: these tests reveal no card")
}

// Detail maps are reused from one record to the next: nothing of one
// record's detail shows in the next, and the engine's names still win over
// the caller's.
func TestAuditDetailIsFreshEachTime(t *testing.T) {
	var got details
	e := &Engine{Vaulting: vaulting.New(nil, &got, nil, nil, nil, nil)}
	u, _ := url.Parse("https://api.example:8443/pay")
	r := &Request{Action: "forward", Method: "POST", URL: u,
		Audit: map[string]any{"authentications": []string{"a1"}, "host": "caller's", "status": "caller's"}}
	e.auditOutcome(context.Background(), nil, r, "failure: host_not_allowed", []string{"CARD_NUMBER_1"}, 1500*time.Microsecond, 0, "address_private")
	r.Audit = nil
	e.auditOutcome(context.Background(), nil, r, "success", nil, 2*time.Millisecond, 201, "")
	want := details{
		`{"authentications":["a1"],"duration_ms":1,"host":"api.example:8443","method":"POST","placeholders":["CARD_NUMBER_1"],"rule":"address_private","status":"caller's"}`,
		`{"duration_ms":2,"host":"api.example:8443","method":"POST","placeholders":null,"status":201}`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("details:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
