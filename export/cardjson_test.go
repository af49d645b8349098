package export

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
	json "github.com/goccy/go-json"
)

// checkCardJSON compares AppendCardJSON, compact and indented, with the JSON
// encoder on c, alone, at a list's level and in lists. It reports whether
// the fast path took c.
func checkCardJSON(t *testing.T, c *ledger.Card) bool {
	t.Helper()
	for _, indent := range []bool{false, true} {
		want, werr := json.MarshalWithOption(c, json.DisableHTMLEscape())
		if indent {
			want, werr = json.MarshalIndentWithOption(c, "", "  ", json.DisableHTMLEscape())
		}
		got, ok := AppendCardJSON([]byte("prefix"), c, indent)
		if !ok {
			if string(got) != "prefix" {
				t.Fatalf("AppendCardJSON declined but changed dst to %q", got)
			}
			if werr == nil && indent {
				if _, compact := ledger.AppendCard(nil, c); compact {
					t.Fatalf("AppendCardJSON took the compact form and declined the indented one: %q", want)
				}
			}
			return false
		}
		got = bytes.TrimPrefix(got, []byte("prefix"))
		if werr != nil || !bytes.Equal(got, want) {
			t.Fatalf("AppendCardJSON (indent %v) and the JSON encoder (%v) disagree:\nfast: %q\njson: %q", indent, werr, got, want)
		}
		for _, list := range [][]ledger.Card{{*c}, {*c, *c}} {
			lwant, _ := json.MarshalWithOption(list, json.DisableHTMLEscape())
			if indent {
				lwant, _ = json.MarshalIndentWithOption(list, "", "  ", json.DisableHTMLEscape())
			}
			if lgot, ok := AppendCardsJSON(nil, list, indent); !ok || !bytes.Equal(lgot, lwant) {
				t.Fatalf("AppendCardsJSON (indent %v, ok %v) and the JSON encoder disagree:\nfast: %q\njson: %q", indent, ok, lgot, lwant)
			}
		}
	}
	for _, level := range []int{1, 3, 20} {
		pad := strings.Repeat("  ", level)
		want, _ := json.MarshalIndentWithOption(c, pad, "  ", json.DisableHTMLEscape())
		if got, ok := AppendCardJSONAt(nil, c, level); !ok || !bytes.Equal(got, want) {
			t.Fatalf("AppendCardJSONAt(level %d) = %q, %v; want %q", level, got, ok, want)
		}
	}
	return true
}

// TestAppendCardJSON: the indented form of every kind of card, checkpoint
// and string is the JSON encoder's, byte for byte.
func TestAppendCardJSON(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	cards := append(richCards(), sparseCards()...)
	for _, cp := range []string{`{}`, `[]`, `1`, `"s"`, `{"a": [1, {"b": []}, "x\"]}"], "c\\": {}}`,
		` [ [ [ ] ], { "k" : null , "t" : true } ] `, `"\\\\\"{"`, `-0.5e+3`} {
		c := card("CP", "checkpoint", ledger.StatusClaimed, 1, 1)
		c.Checkpoint = json.RawMessage(cp)
		c.Progress = intp(40)
		cards = append(cards, c)
	}
	c := card("N", "a \"quoted\" <b>title</b> & \\ \u2028 \x01 é", ledger.StatusDone, 0, 2)
	c.Notes = []ledger.Note{{Text: "first\nline", Author: "a", At: now}, {Text: "{[:,]}", Author: "b", At: now}}
	c.Labels, c.DependsOn, c.Acceptance = nil, []string{}, []string{"x", "y,\"z\""}
	cards = append(cards, c)
	for i := range cards {
		if !checkCardJSON(t, &cards[i]) {
			t.Fatalf("AppendCardJSON declined %+v", cards[i])
		}
	}
	for _, list := range [][]ledger.Card{nil, {}, cards} {
		for _, indent := range []bool{false, true} {
			want, _ := json.MarshalWithOption(list, json.DisableHTMLEscape())
			if indent {
				want, _ = json.MarshalIndentWithOption(list, "", "  ", json.DisableHTMLEscape())
			}
			if got, ok := AppendCardsJSON(nil, list, indent); !ok || !bytes.Equal(got, want) {
				t.Fatalf("AppendCardsJSON(%d cards, indent %v) = %q, %v; want %q", len(list), indent, got, ok, want)
			}
		}
	}
	if got, ok := AppendCardJSON(nil, nil, true); !ok || string(got) != "null" {
		t.Fatalf("AppendCardJSON(nil) = %q, %v", got, ok)
	}
	bad := card("B", "bad", ledger.StatusReady, 0, 1)
	bad.Checkpoint = json.RawMessage(`{"a":1,}`)
	if got, ok := AppendCardJSON([]byte("x"), &bad, true); ok || string(got) != "x" {
		t.Fatalf("AppendCardJSON took a card with an invalid checkpoint: %q", got)
	}
}

// FuzzAppendCardJSON compares the indented form with the JSON encoder on
// cards whose strings and checkpoint come from the fuzzer.
func FuzzAppendCardJSON(f *testing.F) {
	f.Add("title", "owner", []byte(`{"a": [1, "b\\"]"]}`))
	f.Add("\x00\"\\\u2028", "", []byte(` "x" `))
	f.Add("é", "w", []byte(`[[],{},[{}]]`))
	f.Fuzz(func(t *testing.T, title, owner string, cp []byte) {
		c := card("F", title, ledger.StatusClaimed, 3, 1)
		c.ClaimOwner, c.Labels = owner, []string{title, owner}
		if len(cp) > 0 {
			c.Checkpoint = json.RawMessage(cp)
		}
		checkCardJSON(t, &c)
	})
}
