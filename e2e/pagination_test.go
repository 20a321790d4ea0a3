package e2e

import (
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/payorch/e2e/stack"
)

type pageOf struct {
	Items []struct {
		ID string `json:"id"`
	} `json:"items"`
	Limit          int     `json:"limit"`
	NextCursor     *string `json:"next_cursor"`
	PreviousCursor *string `json:"previous_cursor"`
}

func getPage(t *testing.T, c coreClient, path string, q url.Values) pageOf {
	t.Helper()
	code, raw := c.do(t, "GET", path+"?"+q.Encode(), nil)
	if code != 200 {
		t.Fatalf("GET %s?%s = %d %s", path, q.Encode(), code, raw)
	}
	var p pageOf
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// createBuyers makes n buyers with 8 concurrent clients and returns their ids.
func createBuyers(t *testing.T, c coreClient, prefix string, n int) map[string]bool {
	t.Helper()
	var mu sync.Mutex
	ids := map[string]bool{}
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				b := c.ok(t, 201, "POST", "/buyers", map[string]any{"display_name": prefix + strconv.Itoa(i)})
				mu.Lock()
				ids[b["id"].(string)] = true
				mu.Unlock()
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return ids
}

// Walk 250 buyers forward with limit 7 while others are inserted, then
// back from the last page: every row that existed at the start is seen
// exactly once each way.
func TestPaginationIsStableUnderConcurrentInserts(t *testing.T) {
	s := stack.Start(t)
	createMerchantAccount(t, s, "pages")
	c := newCore(s, s.Token(t, "buyers.write"), "pages")
	initial := createBuyers(t, c, "initial ", 250)

	stop := make(chan struct{})
	inserted := make(chan int)
	go func() {
		n := 0
		defer func() { inserted <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			code, raw := c.do(t, "POST", "/buyers", map[string]any{"display_name": "concurrent"})
			if code != 201 {
				t.Errorf("concurrent insert: %d %s", code, raw)
				return
			}
			n++
		}
	}()

	q := url.Values{"limit": {"7"}}
	var forward []string
	var pages []pageOf
	for {
		p := getPage(t, c, "/buyers", q)
		if p.Limit != 7 || len(p.Items) > 7 {
			t.Fatalf("page limit %d with %d items", p.Limit, len(p.Items))
		}
		if len(pages) == 0 && p.PreviousCursor != nil {
			t.Fatal("first page has a previous_cursor")
		}
		if len(pages) > 0 && p.PreviousCursor == nil {
			t.Fatalf("page %d has no previous_cursor", len(pages))
		}
		pages = append(pages, p)
		for _, it := range p.Items {
			forward = append(forward, it.ID)
		}
		if p.NextCursor == nil {
			break
		}
		q.Set("cursor", *p.NextCursor)
	}
	close(stop)
	if n := <-inserted; n == 0 {
		t.Fatal("no concurrent inserts happened during the walk")
	}
	checkWalk(t, "forward", forward, initial)
	if len(pages) != 36 { // 35 pages of 7 and one of 5
		t.Fatalf("%d pages", len(pages))
	}

	// Backward from the last page, while the list has grown at the front.
	last := pages[len(pages)-1]
	backward := idsOf(last)
	q.Set("cursor", *last.PreviousCursor)
	for {
		p := getPage(t, c, "/buyers", q)
		if p.NextCursor == nil {
			t.Fatal("backward page has no next_cursor")
		}
		backward = append(idsOf(p), backward...)
		if p.PreviousCursor == nil {
			break
		}
		q.Set("cursor", *p.PreviousCursor)
	}
	checkWalk(t, "backward", backward, initial)
	// Both walks see the initial rows in the same order (rows inserted
	// before the first page was read may precede them).
	if a, b := onlyInitial(forward, initial), onlyInitial(backward, initial); !slices.Equal(a, b) {
		t.Fatal("the backward walk saw the initial rows in another order")
	}
}

func onlyInitial(ids []string, initial map[string]bool) []string {
	var out []string
	for _, id := range ids {
		if initial[id] {
			out = append(out, id)
		}
	}
	return out
}

func idsOf(p pageOf) []string {
	ids := make([]string, len(p.Items))
	for i, it := range p.Items {
		ids[i] = it.ID
	}
	return ids
}

// checkWalk: no duplicates, and every initial row present.
func checkWalk(t *testing.T, name string, seen []string, initial map[string]bool) {
	t.Helper()
	dup := map[string]bool{}
	found := 0
	for _, id := range seen {
		if dup[id] {
			t.Fatalf("%s walk: %s seen twice", name, id)
		}
		dup[id] = true
		if initial[id] {
			found++
		}
	}
	if found != len(initial) {
		t.Fatalf("%s walk: %d of %d initial rows seen", name, found, len(initial))
	}
}

func TestPaginationRejectsBadParameters(t *testing.T) {
	s := stack.Start(t)
	createMerchantAccount(t, s, "other")
	tok := s.Token(t, "buyers.write", "merchant-accounts.read")
	c, o := newCore(s, tok, ""), newCore(s, tok, "other")
	createBuyers(t, c, "b", 5)
	createBuyers(t, o, "b", 5)

	p := getPage(t, c, "/buyers", url.Values{"limit": {"2"}})
	if p.NextCursor == nil || p.PreviousCursor != nil {
		t.Fatalf("first page %+v", p)
	}
	cur := *p.NextCursor
	flip := []byte(cur)
	for i := range flip { // flip one character in the middle
		if i == len(flip)/2 {
			if flip[i] == 'A' {
				flip[i] = 'B'
			} else {
				flip[i] = 'A'
			}
		}
	}
	accounts := getPage(t, c, "/merchant-accounts", url.Values{"limit": {"1"}})
	if accounts.NextCursor == nil {
		t.Fatal("no merchant account cursor")
	}

	for _, tc := range []struct {
		name    string
		client  coreClient
		query   url.Values
		pointer string
	}{
		{"tampered cursor", c, url.Values{"cursor": {string(flip)}}, "cursor"},
		{"truncated cursor", c, url.Values{"cursor": {cur[:len(cur)-4]}}, "cursor"},
		{"not a cursor", c, url.Values{"cursor": {"hello"}}, "cursor"},
		{"cursor of another merchant account", o, url.Values{"cursor": {cur}}, "cursor"},
		{"cursor of another list", c, url.Values{"cursor": {*accounts.NextCursor}}, "cursor"},
		{"cursor with other filters", c, url.Values{"cursor": {cur}, "search": {"b"}}, "cursor"},
		{"limit 0", c, url.Values{"limit": {"0"}}, "limit"},
		{"limit 101", c, url.Values{"limit": {"101"}}, "limit"},
		{"limit abc", c, url.Values{"limit": {"abc"}}, "limit"},
		{"empty search", c, url.Values{"search": {""}}, "search"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, raw := tc.client.do(t, "GET", "/buyers?"+tc.query.Encode(), nil)
			e := apiError(t, raw)
			if code != 400 || e.Code != "bad_request" || len(e.Details) != 1 ||
				e.Details[0].Pointer != tc.pointer || e.Details[0].Location != "query" {
				t.Fatalf("got %d %s", code, raw)
			}
		})
	}
	// The untampered cursor works, with any limit.
	p2 := getPage(t, c, "/buyers", url.Values{"cursor": {cur}, "limit": {"100"}})
	if len(p2.Items) != 3 || p2.NextCursor != nil || p2.PreviousCursor == nil {
		t.Fatalf("second page %+v", p2)
	}
	if d := getPage(t, c, "/buyers", nil); d.Limit != 20 || len(d.Items) != 5 || d.NextCursor != nil || d.PreviousCursor != nil {
		t.Fatalf("default page %+v", d)
	}
}
