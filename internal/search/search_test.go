package search

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

func ids(rs []Result) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Card.ID)
	}
	return strings.Join(out, " ")
}

func TestCards(t *testing.T) {
	cards := []ledger.Card{
		{ID: "N1", Title: "unrelated", Notes: []ledger.Note{{Text: "the LOGIN page broke again"}}},
		{ID: "B1", Title: "cache warmup", Body: "the login flow is slow"},
		{ID: "L1", Title: "flaky", Labels: []string{"login"}},
		{ID: "T1", Title: "Fix Login bug"},
		{ID: "A1", Title: "other", Acceptance: []string{"login works on Safari"}},
		{ID: "login", Title: "the card named login"},
		{ID: "U1", Title: "Größe des Überblicks", Body: "ÄRGER"},
	}
	for _, tc := range []struct{ query, want string }{
		{"login", "login T1 L1 A1 B1 N1"},
		{"LOGIN bug", "T1"},
		{"fix bug", "T1"},
		{"login safari", "A1"},
		{"nothing-like-this", ""},
		{"", ""},
		{"   ", ""},
		{"überblicks", "U1"},
		{"ärger", "U1"},
		{"t1", "T1"},
	} {
		if got := ids(Cards(cards, tc.query)); got != tc.want {
			t.Errorf("Cards(%q) = %q, want %q", tc.query, got, tc.want)
		}
	}
	rs := Cards(cards, "login")
	if f := strings.Join(rs[0].Fields, ","); f != "id,title" {
		t.Errorf("fields of login = %s", f)
	}
}

// fleet is n cards shaped like a real backlog: titles, bodies of a few
// hundred bytes, labels, a note on some.
func fleet(n int) []ledger.Card {
	r := rand.New(rand.NewSource(1))
	words := strings.Fields("the a login cache flaky test schema service migrate deploy build worker queue lease claim timeout retry index parser render board export import search token user session api fix add remove refactor")
	sentence := func(k int) string {
		var b strings.Builder
		for i := 0; i < k; i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[r.Intn(len(words))])
		}
		return b.String()
	}
	out := make([]ledger.Card, n)
	now := time.Now()
	for i := range out {
		c := ledger.Card{ID: fmt.Sprintf("bl-%08d", i), Title: sentence(6), Body: sentence(60),
			Labels: []string{words[r.Intn(len(words))]}, Acceptance: []string{sentence(8)}, CreatedAt: now}
		if i%3 == 0 {
			c.Notes = []ledger.Note{{Text: sentence(20)}}
		}
		out[i] = c
	}
	return out
}

// BenchmarkCards10k: bl search must answer as fast as one types; the bar
// is 50 ms at 10k cards for the whole search.
func BenchmarkCards10k(b *testing.B) {
	cards := fleet(10000)
	for _, q := range []string{"login", "flaky timeout", "zzz-no-match"} {
		b.Run(strings.ReplaceAll(q, " ", "_"), func(b *testing.B) {
			start := cpuTime()
			for b.Loop() {
				Cards(cards, q)
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		})
	}
}
