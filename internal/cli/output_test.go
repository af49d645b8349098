package cli

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/ledger"
)

// TestWriteJSONCards: the documents writeJSON writes without the JSON
// encoder are the bytes the JSON encoder writes.
func TestWriteJSONCards(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600700800, time.UTC)
	later := at.Add(time.Hour)
	progress := 40
	claimed := ledger.Card{ID: "bl-k3x9q2mf", Title: `a <b>"title"</b> & more`, Body: "line\nline\u2028", Labels: []string{"x"},
		Priority: 2, Status: ledger.StatusClaimed, DependsOn: []string{}, Acceptance: []string{"works"}, ClaimOwner: "w",
		ClaimEpoch: 3, ClaimedAt: &at, ClaimTTLSeconds: 3600, LeaseExpiresAt: &later, LastHeartbeatAt: &at, Attempts: 1,
		Progress: &progress, Checkpoint: json.RawMessage(`{"step": 4, "files": ["a.go", {}], "e": []}`), CreatedAt: at, UpdatedAt: at, Version: 5}
	ready := ledger.Card{ID: "A", Title: "t", Status: ledger.StatusReady, CreatedAt: at, UpdatedAt: at, Version: 1}
	var noCard *ledger.Card
	for _, v := range []any{nil, claimed, &claimed, ready, noCard, []ledger.Card{}, []ledger.Card(nil), []ledger.Card{claimed, ready}} {
		want, err := json.MarshalIndentWithOption(v, "", "  ", json.DisableHTMLEscape())
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := cardJSON(v); !ok {
			t.Fatalf("cardJSON declined %#v", v)
		}
		var out bytes.Buffer
		if err := writeJSON(&out, v); err != nil {
			t.Fatal(err)
		}
		if got := out.Bytes(); !bytes.Equal(got, append(want, '\n')) {
			t.Fatalf("writeJSON(%T) =\n%s\nwant\n%s", v, got, want)
		}
	}
	if _, ok := cardJSON(map[string]int{}); ok {
		t.Fatal("cardJSON took a map")
	}
}

// TestListJSONAllocations: printing a list of cards as JSON allocates
// per write, not per card (each card once took a 2 KB buffer of its own:
// 200 MB for bl list --json of 100k cards). BenchmarkListJSON100k
// measures the whole command.
func TestListJSONAllocations(t *testing.T) {
	cards := make([]ledger.Card, 1000)
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	a := &App{Stdout: io.Discard, standing: map[string]ledger.Standing{}}
	for i := range cards {
		cards[i] = ledger.Card{ID: fmt.Sprintf("C%04d", i), Title: "card " + strconv.Itoa(i), Status: ledger.StatusReady, CreatedAt: at, UpdatedAt: at, Labels: []string{"x"}}
		a.standing[cards[i].ID] = ledger.Standing{State: ledger.StateReady, Claimable: true}
	}
	a.JSON = true
	allocs := testing.AllocsPerRun(5, func() {
		if err := a.writeJSON(cards); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > float64(len(cards))/10 {
		t.Errorf("writing %d cards as JSON made %.0f allocations", len(cards), allocs)
	}
}
