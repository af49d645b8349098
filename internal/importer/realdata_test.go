package importer_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/export"
	"github.com/bl-backlog/bl/internal/importer"
	"github.com/bl-backlog/bl/ledger"
)

// The files under testdata/import are real exports of other projects
// (testdata/import/SOURCES.md). The tests count each field over the raw
// JSON with encoding/json, independently of the importer, and compare
// with the cards the import leaves in a real backlog.

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "import", name))
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if _, err := out.ReadFrom(zr); err != nil {
			t.Fatal(err)
		}
		data = out.Bytes()
	}
	return data
}

// importInto plans items against the backlog in dir and writes the plan,
// as bl import does, returning every card after.
func importInto(t testing.TB, dir string, items []importer.Item, rep *importer.Report, opts importer.Options) []ledger.Card {
	t.Helper()
	if _, err := ledger.Init(dir); err != nil {
		t.Fatal(err)
	}
	b, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	existing, err := b.List(ledger.Filter{}, ledger.SortID)
	if err != nil {
		t.Fatal(err)
	}
	acts, err := importer.Plan(items, existing, opts, rep)
	if err != nil {
		t.Fatal(err)
	}
	m := ledger.Mutation{Actor: "importer-test"}
	if err := importer.Write(context.Background(), b, m, acts, time.Minute, false); err != nil {
		t.Fatal(err)
	}
	cards, err := b.List(ledger.Filter{}, ledger.SortID)
	if err != nil {
		t.Fatal(err)
	}
	return cards
}

type rawIssue map[string]any

func (r rawIssue) str(k string) string { s, _ := r[k].(string); return s }

func rawLines(t testing.TB, data []byte) []rawIssue {
	var out []rawIssue
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r rawIssue
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func rawTime(t testing.TB, s string) time.Time {
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// TestBeadsRealFiles imports beads' own issues.jsonl (704 issues, most
// of them ephemeral, and 2,393 issues with comments and tombstones) and
// checks every field against the raw file.
func TestBeadsRealFiles(t *testing.T) {
	for _, tc := range []struct {
		file      string
		ephemeral bool
	}{
		{"beads/issues-704.jsonl.gz", false},
		{"beads/issues-704.jsonl.gz", true},
		{"beads/issues-2393.jsonl.gz", true},
	} {
		t.Run(fmt.Sprintf("%s/ephemeral=%v", tc.file, tc.ephemeral), func(t *testing.T) {
			data := fixture(t, tc.file)
			items, rep, err := importer.ReadBeads(tc.file, bytes.NewReader(data), importer.ReadOptions{IncludeEphemeral: tc.ephemeral})
			if err != nil {
				t.Fatal(err)
			}
			cards := importInto(t, t.TempDir(), items, rep, importer.Options{Source: "beads"})
			checkBeads(t, rawLines(t, data), cards, rep, tc.ephemeral)
		})
	}
}

func checkBeads(t *testing.T, raw []rawIssue, cards []ledger.Card, rep *importer.Report, ephemeral bool) {
	byKey := map[string]*ledger.Card{}
	for i := range cards {
		byKey[cards[i].IdempotencyKey] = &cards[i]
	}
	kept := map[string]rawIssue{}
	want, got := map[string]int{}, map[string]int{}
	for _, r := range raw {
		switch {
		case r.str("status") == "tombstone":
			want["skipped tombstone"]++
		case r["ephemeral"] == true && !ephemeral:
			want["skipped ephemeral"]++
		default:
			kept[r.str("id")] = r
		}
	}
	got["skipped tombstone"] = rep.LeftOut.Count("tombstones skipped (issues deleted in beads)")
	got["skipped ephemeral"] = rep.LeftOut.Count("ephemeral issues skipped: --include-ephemeral to keep")
	if len(cards) != len(kept) {
		t.Fatalf("%d cards, want %d (the issues neither tombstones nor skipped ephemeral)", len(cards), len(kept))
	}
	for id, r := range kept {
		c := byKey["beads:"+id]
		if c == nil {
			t.Fatalf("no card for %s", id)
		}
		want["title"]++
		if c.Title == r.str("title") {
			got["title"]++
		}
		if d := r.str("description"); d != "" {
			want["description"]++
			if strings.HasPrefix(c.Body, d) {
				got["description"]++
			}
		}
		for _, k := range []string{"design", "notes"} {
			if v := r.str(k); strings.TrimSpace(v) != "" {
				want[k]++
				if strings.Contains(c.Body, v) {
					got[k]++
				}
			}
		}
		if p, ok := r["priority"].(float64); ok {
			want["priority"]++
			if c.Priority == 2-int(p) {
				got["priority"]++
			}
		}
		for k, ct := range map[string]*time.Time{"created_at": c.SourceCreatedAt, "updated_at": c.SourceUpdatedAt, "closed_at": c.SourceClosedAt} {
			if s := r.str(k); s != "" {
				want[k]++
				if ct != nil && ct.Equal(rawTime(t, s)) {
					got[k]++
				}
			}
		}
		status := r.str("status")
		want["status "+status]++
		wantStatus := map[string]ledger.Status{"open": ledger.StatusReady, "in_progress": ledger.StatusReady, "hooked": ledger.StatusReady,
			"blocked": ledger.StatusBlocked, "deferred": ledger.StatusBlocked, "pinned": ledger.StatusBlocked, "closed": ledger.StatusDone}[status]
		if c.Status == wantStatus {
			got["status "+status]++
		}
		if status == "closed" {
			want["close_reason"]++
			reason := r.str("close_reason")
			if reason == "" {
				reason = "closed in beads"
			}
			if c.CloseNote == reason {
				got["close_reason"]++
			}
		}
		if a := r.str("assignee"); a != "" {
			want["assignee"]++
			if c.Assignee == a {
				got["assignee"]++
			}
		}
		if o := r.str("owner"); o != "" {
			want["owner"]++
			if slices.Contains(c.Labels, "owner:"+o) {
				got["owner"]++
			}
		}
		if ty := r.str("issue_type"); ty != "" && ty != "task" {
			want["issue_type"]++
			if slices.Contains(c.Labels, "type:"+ty) {
				got["issue_type"]++
			}
		}
		labels, _ := r["labels"].([]any)
		for _, l := range labels {
			want["labels"]++
			if slices.Contains(c.Labels, l.(string)) {
				got["labels"]++
			}
		}
		// Dependencies: each lands as its bl link when the other end was
		// imported, else in the card's note of links not imported.
		deps, _ := r["dependencies"].([]any)
		parentSeen := false
		for _, d := range deps {
			dm := d.(map[string]any)
			if dm["issue_id"] != id {
				continue
			}
			typ, to := dm["type"].(string), dm["depends_on_id"].(string)
			want["dependency "+typ]++
			target := byKey["beads:"+to]
			if target == nil {
				if slices.ContainsFunc(c.Notes, func(n ledger.Note) bool {
					return strings.HasPrefix(n.Text, "links in beads to issues not imported:") && strings.Contains(n.Text, to)
				}) {
					got["dependency "+typ]++
				}
				continue
			}
			var ok bool
			switch typ {
			case "blocks":
				ok = slices.Contains(c.DependsOn, target.ID)
			case "parent-child":
				ok = (!parentSeen && c.Parent == target.ID) || (parentSeen && c.HasLink(ledger.LinkRelated, target.ID))
				parentSeen = true
			case "discovered-from", "supersedes", "duplicates":
				ok = c.HasLink(typ, target.ID)
			default: // related, relates-to, tracks, replies-to
				ok = c.HasLink(ledger.LinkRelated, target.ID)
			}
			if ok {
				got["dependency "+typ]++
			}
		}
		comments, _ := r["comments"].([]any)
		for _, cm := range comments {
			m := cm.(map[string]any)
			want["comments"]++
			at := rawTime(t, m["created_at"].(string))
			if slices.ContainsFunc(c.Notes, func(n ledger.Note) bool {
				return n.Text == m["text"] && n.Author == m["author"] && n.SourceAt != nil && n.SourceAt.Equal(at)
			}) {
				got["comments"]++
			}
		}
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d in the source, %d in the backlog", k, n, got[k])
		}
	}
	t.Logf("per-field counts checked: %v", want)
}

// TestBeadsRoundTrip: bl export --format beads of an imported beads file,
// imported into a new backlog, gives the same cards.
func TestBeadsRoundTrip(t *testing.T) {
	for _, file := range []string{"beads/issues-704.jsonl.gz", "beads/issues-2393.jsonl.gz"} {
		t.Run(file, func(t *testing.T) {
			read := func(data []byte) ([]importer.Item, *importer.Report) {
				items, rep, err := importer.ReadBeads(file, bytes.NewReader(data), importer.ReadOptions{IncludeEphemeral: true})
				if err != nil {
					t.Fatal(err)
				}
				return items, rep
			}
			items, rep := read(fixture(t, file))
			first := importInto(t, t.TempDir(), items, rep, importer.Options{Source: "beads"})
			out, err := export.RenderBeads(first, export.Options{})
			if err != nil {
				t.Fatal(err)
			}
			items, rep = read(out)
			second := importInto(t, t.TempDir(), items, rep, importer.Options{Source: "beads"})
			a, b := normalize(first), normalize(second)
			if len(a) != len(b) {
				t.Fatalf("%d cards, then %d", len(a), len(b))
			}
			diffs := 0
			for i := range a {
				if a[i] != b[i] && diffs < 5 {
					diffs++
					t.Errorf("card differs after the round trip:\n first %s\nsecond %s", a[i], b[i])
				}
			}
		})
	}
}

// normalize renders each card's user-visible fields, references as the
// other card's key, notes with their source time (or, for a note the
// import made, its ledger time), as one comparable string each.
func normalize(cards []ledger.Card) []string {
	key := map[string]string{}
	for _, c := range cards {
		key[c.ID] = c.IdempotencyKey
	}
	var out []string
	for _, c := range cards {
		var b strings.Builder
		fmt.Fprintf(&b, "%s|%q|%q|%d|%s|%q|%q|%v|", c.IdempotencyKey, c.Title, c.Body, c.Priority, c.Status, c.CloseNote, c.BlockedReason, c.Acceptance)
		fmt.Fprintf(&b, "%v|", slices.Sorted(slices.Values(c.Labels)))
		var deps []string
		for _, d := range c.DependsOn {
			deps = append(deps, key[d])
		}
		slices.Sort(deps)
		var links []string
		for _, l := range c.Links {
			links = append(links, l.Type+">"+key[l.To])
		}
		slices.Sort(links)
		fmt.Fprintf(&b, "%v|%s|%v|", deps, key[c.Parent], links)
		for _, t := range []*time.Time{c.SourceCreatedAt, c.SourceUpdatedAt, c.SourceClosedAt} {
			if t != nil {
				b.WriteString(t.UTC().Format(time.RFC3339Nano))
			}
			b.WriteByte('|')
		}
		for _, n := range c.Notes {
			at := n.At
			if n.SourceAt != nil {
				at = *n.SourceAt
			}
			fmt.Fprintf(&b, "[%s %s %q]", n.Author, at.UTC().Format(time.RFC3339Nano), n.Text)
		}
		out = append(out, b.String())
	}
	slices.Sort(out)
	return out
}
