package ledger

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/store"
	"github.com/bl-backlog/bl/ledger/internal/wire"
	json "github.com/goccy/go-json"
)

// The cards and snapshots the store writes, through the encoders. The
// encoders themselves are tested in package wire.

// checkCardEncoding fails unless the fast path takes c and writes it, and
// its snapshot line, as the JSON encoder does.
func checkCardEncoding(t *testing.T, c *Card) {
	t.Helper()
	want, err := json.MarshalWithOption(c, json.DisableHTMLEscape())
	if err != nil {
		t.Fatal(err)
	}
	got, ok := AppendCard(nil, c)
	if !ok {
		t.Fatalf("AppendCard declined %+v", *c)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendCard and the JSON encoder disagree:\nfast: %q\njson: %q", got, want)
	}
	lwant, _ := json.MarshalWithOption(wire.SnapshotLine{Card: c}, json.DisableHTMLEscape())
	line, err := wire.AppendFramed(nil, wire.SnapshotLine{Card: c})
	if err != nil || !bytes.Equal(line, frame(string(lwant))) {
		t.Fatalf("snapshot line = %q, %v; want %q", line, err, frame(string(lwant)))
	}
}

// TestEncodeTakesEveryOp: the cards the fold and the API return take the
// fast path. (The events of every op: package wire's test of this name.)
func TestEncodeTakesEveryOp(t *testing.T) {
	// The cards of the history, and of a backlog after each command.
	var cards []Card
	for _, h := range [][]*Event{wire.SnapshotEvents(), wire.BenchEvents(10)} {
		cards = append(cards, fold.Fold(h).List(Filter{}, t0, fold.SortCreated)...)
	}
	e := newEnv(t)
	ctx := context.Background()
	c, _, err := e.b.Create(ctx, CreateRequest{Mutation: m, Title: "a <b>card</b> & \"more\"", Body: "body\nline", Labels: []string{"x", "y"},
		Acceptance: []string{"it works"}, Priority: 2})
	if err != nil {
		t.Fatal(err)
	}
	cards = append(cards, c)
	claimed, err := e.b.Claim(ctx, ClaimRequest{Mutation: m, Owner: "w", TTL: time.Hour})
	if err != nil || claimed == nil {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	cards = append(cards, *claimed)
	c, err = e.b.Heartbeat(ctx, HeartbeatRequest{Mutation: m, ID: claimed.ID, Owner: "w", Epoch: claimed.ClaimEpoch,
		Progress: intp(50), Checkpoint: json.RawMessage(`{"step": 4, "files": ["a.go"]}`)})
	if err != nil {
		t.Fatal(err)
	}
	cards = append(cards, c)
	c, err = e.b.Complete(ctx, LeaseRequest{Mutation: m, ID: claimed.ID, Owner: "w", Epoch: claimed.ClaimEpoch, Reason: "done ✓"})
	if err != nil {
		t.Fatal(err)
	}
	cards = append(cards, c)
	statuses := map[Status]bool{}
	for i := range cards {
		checkCardEncoding(t, &cards[i])
		statuses[cards[i].Status] = true
	}
	if len(statuses) != 4 {
		t.Fatalf("cards of statuses %v, want all four", statuses)
	}
}

// TestEncodeSnapshotAsJSON: a snapshot is the bytes it was when the JSON
// encoder wrote every line.
func TestEncodeSnapshotAsJSON(t *testing.T) {
	for _, h := range [][]*Event{wire.SnapshotEvents(), wire.BenchEvents(30)} {
		out, _, err := store.EncodeSnapshot(fold.Fold(h), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitAfter(out, []byte{'\n'})
		for _, l := range lines[1 : len(lines)-1] {
			body, err := wire.CheckFrame(l)
			if err != nil {
				t.Fatal(err)
			}
			var sl wire.SnapshotLine
			if err := json.Unmarshal(body, &sl); err != nil {
				t.Fatal(err)
			}
			want, err := json.MarshalWithOption(sl, json.DisableHTMLEscape())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(l, frame(string(want))) {
				t.Fatalf("snapshot line\n%q\nwant\n%q", l, frame(string(want)))
			}
		}
	}
}

// BenchmarkCardJSON measures the compact JSON of a claimed card.
func BenchmarkCardJSON(b *testing.B) {
	cards := fold.Fold(wire.SnapshotEvents()).List(Filter{}, t0, fold.SortCreated)
	var c *Card
	for i := range cards {
		if cards[i].Status == StatusClaimed {
			c = &cards[i]
		}
	}
	b.Run("fast", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, ok := AppendCard(nil, c); !ok {
				b.Fatal("declined")
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := json.MarshalWithOption(c, json.DisableHTMLEscape()); err != nil {
				b.Fatal(err)
			}
		}
	})
}
