package forward_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/auditspool"
	"github.com/payorch/vault-proxy/forward"
	"github.com/payorch/vault-proxy/vaulting"
	"github.com/payorch/vault-proxy/vaulting/vaultingtest"
	"github.com/valyala/fasthttp"
)

// fullSpoolChild marks the child process of
// TestNothingIsSentWithoutRoomForTheAuditRecord.
const fullSpoolChild = "FORWARD_FULL_SPOOL_CHILD"

// TestNothingIsSentWithoutRoomForTheAuditRecord: the audit record of a
// forward is written after the send, so the room for it must be there
// before the card is opened. Here the spool can still write (Writable is
// nil) but its active segment has no room left for the record and the
// disk none for another segment: the forward is refused with
// ErrAuditUnavailable and the destination, a loopback server counting
// requests, receives nothing. Once there is room again the forward goes
// out and its record is stored.
//
// The full disk is a file size limit (RLIMIT_FSIZE), which fails the
// reservation of a segment as a full filesystem does: it is set in a
// child process of the test binary, so that it limits nothing else.
func TestNothingIsSentWithoutRoomForTheAuditRecord(t *testing.T) {
	if os.Getenv(fullSpoolChild) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v")
		cmd.Env = append(os.Environ(), fullSpoolChild+"=1")
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	const segSize = 64 << 10
	ctx := context.Background()
	p := vaultingtest.New(t, nil)
	dir := t.TempDir()
	spool, err := auditspool.Open(dir, p.DB, auditspool.Options{SegmentSize: segSize, ProbeInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer spool.Close()
	svc := vaulting.New(p.DB, spool, p.Sealer, p.Key, p.Codes, nil)
	caller := vaulting.Caller{MerchantAccountID: "m1", Actor: "test", RequestID: "req-full-spool"}
	rec, err := svc.VaultCard(ctx, caller, vaulting.CardRequest{Kind: vaultproxy.KindCard, Number: []byte("4111111111111111"), ExpirationDate: "12/30"})
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer target.Close()
	u, _ := url.Parse(target.URL + "/pay")
	e := &forward.Engine{Vaulting: svc}
	send := func() error {
		var resp fasthttp.Response
		_, err := e.Send(ctx, forward.Request{Caller: caller, Action: "forward", Purpose: "vault-forward", Method: "POST", URL: u,
			ContentType: "application/json", Body: []byte(`{"n":"{{ CARD_NUMBER_1 }}"}`), Tokens: []uuid.UUID{rec.Token}},
			&resp, func(_ context.Context, req *fasthttp.Request, resp *fasthttp.Response) error {
				return fasthttp.DoTimeout(req, resp, 5*time.Second)
			})
		return err
	}

	// The harness can send: the zero count below means something.
	if err := send(); err != nil || hits.Load() != 1 {
		t.Fatalf("forward with room: %v, %d requests", err, hits.Load())
	}

	// No room on the disk for another segment once the standby segment,
	// made ready at the start, is taken.
	waitForFile(t, filepath.Join(dir, "standby.tmp"))
	var room syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &room); err != nil {
		t.Fatal(err)
	}
	full := room
	full.Cur = segSize - 1
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &full); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Setrlimit(syscall.RLIMIT_FSIZE, &room) }()
	fillTheStandby(t, spool, dir, segSize, 100)
	if err := spool.Writable(); err != nil {
		t.Fatalf("the spool is not writable before the forward (%v): the test needs one that is", err)
	}

	err = send()
	if !errors.Is(err, vaultproxy.ErrAuditUnavailable) {
		t.Errorf("forward without room for its audit record: %v, want ErrAuditUnavailable", err)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("the destination received %d requests, want none since the forward with room", n-1)
	}

	// Room again: the next probe finds it.
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &room); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if err := send(); err != nil || hits.Load() != 2 {
		t.Fatalf("forward once there is room: %v, %d requests", err, hits.Load())
	}
	if err := spool.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var stored int
	if err := p.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'forward' AND outcome = 'success'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != 2 {
		t.Fatalf("%d forwards recorded, want the 2 that were sent", stored)
	}
}

func waitForFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", path)
		}
	}
}

// fillTheStandby records events until the spool has rolled into its
// standby segment, and then fills that one up to left bytes: less than
// any forward's record. Each frame's size is known exactly (its JSON as
// EncodeBatch writes it, after the 16-byte frame header), because the
// spool's free space cannot be read from outside.
func fillTheStandby(t *testing.T, s *auditspool.Spool, dir string, segSize, left int) {
	t.Helper()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	filler := func(pad int) (vaultproxy.AuditEvent, int) {
		e := vaultproxy.AuditEvent{OccurredAt: at, Actor: "filler", MerchantAccountID: "m1", Action: "fill", Outcome: "success",
			Detail: map[string]any{"pad": strings.Repeat("x", pad)}}
		b, err := auditspool.EncodeBatch(0, e)
		if err != nil {
			t.Fatal(err)
		}
		return e, 16 + len(b.Records) - 2 // the batch's [ and ]
	}
	record := func(e vaultproxy.AuditEvent) {
		if err := s.Record(context.Background(), e); err != nil {
			t.Fatalf("filler: %v", err)
		}
	}
	// The newest segment's name: shipped segments are deleted meanwhile.
	newest := func() string {
		m, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
		if len(m) == 0 {
			return ""
		}
		return slices.Max(m)
	}
	e, size := filler(1000)
	first := newest()
	for newest() == first {
		record(e)
	}
	standby := newest()
	used := size // the filler that started the standby segment
	for used+2*size+left <= segSize {
		record(e)
		used += size
	}
	_, bare := filler(0)
	last, n := filler(segSize - used - left - bare)
	if n != segSize-used-left {
		t.Fatalf("the last filler is %d bytes, want %d", n, segSize-used-left)
	}
	record(last)
	if newest() != standby {
		t.Fatalf("the spool rolled past the standby segment while it was filled")
	}
}
