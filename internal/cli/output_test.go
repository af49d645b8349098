package cli

import (
	"bytes"
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
