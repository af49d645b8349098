package importer_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/internal/importer"
	"github.com/bl-backlog/bl/internal/importer/mdplan"
	"github.com/bl-backlog/bl/ledger"
)

// paginated is the stream gh api --paginate prints for the recorded REST
// responses of octokit/fixtures: each page's JSON array, one after the
// other.
func paginated(t *testing.T) (stream []byte, issues []map[string]any) {
	var rec []struct {
		Response json.RawMessage `json:"response"`
	}
	if err := json.Unmarshal(fixture(t, "github/octokit-paginate-issues.json"), &rec); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, r := range rec {
		var page []map[string]any
		if err := json.Unmarshal(r.Response, &page); err != nil {
			t.Fatal(err)
		}
		issues = append(issues, page...)
		out, _ := json.MarshalIndent(page, "", "  ")
		buf.Write(out)
	}
	return buf.Bytes(), issues
}

func TestGithubRESTPaginated(t *testing.T) {
	stream, raw := paginated(t)
	items, rep, err := importer.ReadGithub("issues.json", bytes.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	wantIssues, wantComments := 0, 0
	for _, r := range raw {
		if r["pull_request"] == nil {
			wantIssues++
			wantComments += int(r["comments"].(float64))
		}
	}
	if len(items) != wantIssues || wantIssues == 0 {
		t.Fatalf("%d items, want %d", len(items), wantIssues)
	}
	if n := rep.LeftOut.Count("comments not in the file, only counted (use gh issue list --json comments)"); n != wantComments {
		t.Errorf("%d comments counted as left out, the file has %d", n, wantComments)
	}
	cards := importInto(t, t.TempDir(), items, rep, importer.Options{Source: "github", KeepIDs: true})
	byID := map[string]ledger.Card{}
	for _, c := range cards {
		byID[c.ID] = c
	}
	for _, r := range raw {
		n := int(r["number"].(float64))
		c, ok := byID["gh-"+itoa(n)]
		if !ok {
			t.Fatalf("#%d: no card gh-%d", n, n)
		}
		if c.Title != r["title"] || c.IdempotencyKey != "github:"+r["html_url"].(string) {
			t.Errorf("#%d: title %q key %q", n, c.Title, c.IdempotencyKey)
		}
		created, _ := time.Parse(time.RFC3339, r["created_at"].(string))
		if c.SourceCreatedAt == nil || !c.SourceCreatedAt.Equal(created) {
			t.Errorf("#%d: source_created_at %v, want %v", n, c.SourceCreatedAt, created)
		}
	}
}

// TestGithubSlurp: gh api --paginate --slurp wraps the pages in one array.
func TestGithubSlurp(t *testing.T) {
	stream, raw := paginated(t)
	slurped := "[" + strings.ReplaceAll(string(stream), "][", "],[") + "]"
	items, _, err := importer.ReadGithub("s.json", strings.NewReader(slurped))
	if err != nil || len(items) != len(raw) {
		t.Fatalf("%d items of %d: %v", len(items), len(raw), err)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestGithubGraphQLFixtures reads the responses gh itself reads (cli/cli's
// fixtures): assignees, labels, milestone and the comment count are all
// accounted for.
func TestGithubGraphQLFixtures(t *testing.T) {
	items, rep, err := importer.ReadGithub("view.json", bytes.NewReader(fixture(t, "github/gh-issueView_previewWithMetadata.json")))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Data struct {
			Repository struct {
				Issue struct {
					Labels    struct{ Nodes []struct{ Name string } }
					Assignees struct{ Nodes []struct{ Login string } }
					Milestone struct{ Title string }
					Comments  struct{ TotalCount int }
				}
			}
		}
	}
	if err := json.Unmarshal(fixture(t, "github/gh-issueView_previewWithMetadata.json"), &raw); err != nil {
		t.Fatal(err)
	}
	is := raw.Data.Repository.Issue
	if len(items) != 1 {
		t.Fatalf("%d items", len(items))
	}
	cards := importInto(t, t.TempDir(), items, rep, importer.Options{Source: "github", KeepIDs: true})
	c := cards[0]
	if c.ID != "gh-123" {
		t.Errorf("id %s, want gh-123", c.ID)
	}
	for _, l := range is.Labels.Nodes {
		if !slices.Contains(c.Labels, l.Name) {
			t.Errorf("label %q missing from %v", l.Name, c.Labels)
		}
	}
	for i, a := range is.Assignees.Nodes {
		if (i == 0 && c.Assignee != a.Login) || (i > 0 && !slices.Contains(c.Labels, "assignee:"+a.Login)) {
			t.Errorf("assignee %q: card's %q, labels %v", a.Login, c.Assignee, c.Labels)
		}
	}
	if !slices.Contains(c.Labels, "milestone:"+is.Milestone.Title) {
		t.Errorf("milestone %q missing from %v", is.Milestone.Title, c.Labels)
	}
	if n := rep.LeftOut.Count("comments not in the file, only counted (use gh issue list --json comments)"); n != is.Comments.TotalCount {
		t.Errorf("%d comments counted, the file says %d", n, is.Comments.TotalCount)
	}
	for _, f := range []string{"github/gh-issueList.json", "github/gh-issueSearch.json"} {
		items, _, err := importer.ReadGithub(f, bytes.NewReader(fixture(t, f)))
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != 3 {
			t.Errorf("%s: %d items, want 3", f, len(items))
		}
	}
}

// TestGithubCLIShape: gh issue list --json, with comments, assignees,
// the state reason and times.
func TestGithubCLIShape(t *testing.T) {
	in := `[{"number":7,"title":"Crash on start","body":"b","state":"CLOSED","stateReason":"NOT_PLANNED",
"url":"https://github.com/o/r/issues/7","author":{"login":"ann"},"assignees":[{"login":"bo"},{"login":"cy"}],
"labels":[{"name":"bug"}],"milestone":{"title":"v2"},"createdAt":"2024-01-02T03:04:05Z","closedAt":"2024-02-01T00:00:00Z",
"comments":[{"author":{"login":"dee"},"body":"seen it","createdAt":"2024-01-03T00:00:00Z"}]}]`
	items, rep, err := importer.ReadGithub("i.json", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	cards := importInto(t, t.TempDir(), items, rep, importer.Options{Source: "github", KeepIDs: true})
	c := cards[0]
	if c.ID != "gh-7" || c.Status != ledger.StatusDone || c.CloseNote != "closed on GitHub (not planned)" {
		t.Errorf("card %s %s %q", c.ID, c.Status, c.CloseNote)
	}
	if c.Assignee != "bo" {
		t.Errorf("assignee %q, want bo", c.Assignee)
	}
	for _, l := range []string{"bug", "milestone:v2", "assignee:cy"} {
		if !slices.Contains(c.Labels, l) {
			t.Errorf("label %q missing from %v", l, c.Labels)
		}
	}
	if len(c.Notes) != 1 || c.Notes[0].Author != "dee" || c.Notes[0].SourceAt == nil || c.Notes[0].SourceAt.Format(time.RFC3339) != "2024-01-03T00:00:00Z" {
		t.Errorf("notes %+v", c.Notes)
	}
	if c.SourceClosedAt == nil || c.SourceCreatedAt == nil {
		t.Errorf("source times %v %v", c.SourceCreatedAt, c.SourceClosedAt)
	}
}

// taskLine and fenceLine count task items the plain way, without a
// markdown parser: a check on the parser's count.
var (
	taskLine  = regexp.MustCompile(`^\s*([-*+]|\d+[.)])\s+\[[ xX]\]\s+\S`)
	fenceLine = regexp.MustCompile("^\\s{0,3}(```+|~~~+)")
)

func countTasks(data []byte) (tasks, checked int) {
	fence := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		l := sc.Text()
		if m := fenceLine.FindStringSubmatch(l); m != nil {
			switch {
			case fence == "":
				fence = m[1]
			case strings.HasPrefix(m[1], fence[:1]) && len(m[1]) >= len(fence):
				fence = ""
			}
			continue
		}
		if fence == "" && taskLine.MatchString(l) {
			tasks++
			if strings.Contains(l, "[x]") || strings.Contains(l, "[X]") {
				checked++
			}
		}
	}
	return tasks, checked
}

func TestMarkdownRealPlans(t *testing.T) {
	// WORKFLOWS.md holds its 106 checkboxes in code blocks, as examples:
	// none is a card.
	for _, f := range []string{"markdown/RELEASING.md", "markdown/WORKFLOWS.md", "markdown/MANUAL_GITHUB_GIT_REMOTE_TEST.md"} {
		data := fixture(t, f)
		items, rep, err := mdplan.ReadMarkdown(f, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		tasks, checked := countTasks(data)
		done := 0
		for _, it := range items {
			if it.Status == ledger.StatusDone {
				done++
			}
		}
		if len(items) != tasks || done != checked || (tasks == 0) != strings.Contains(f, "WORKFLOWS") {
			t.Errorf("%s: %d items (%d done), the file has %d task lines outside code (%d checked)", f, len(items), done, tasks, checked)
		}
		cards := importInto(t, t.TempDir(), items, rep, importer.Options{Source: "markdown"})
		if len(cards) != tasks {
			t.Errorf("%s: %d cards, want %d", f, len(cards), tasks)
		}
	}
}

func TestMarkdownCommonMark(t *testing.T) {
	in := "Phase B\n=======\n\n1. [ ] ordered\n   1. [x] nested ordered\n\n~~~\n- [ ] in a tilde fence\n~~~\n\n```md\n- [ ] in a backtick fence\n```\n\n## C ##\n\n* [ ] starred\n  continued line\n"
	items, _, err := mdplan.ReadMarkdown("plan.md", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, it.Phase+"|"+it.Title+"|"+strings.TrimPrefix(it.Parent, "markdown:plan.md:")+"|"+string(it.Status)+"|"+it.Body)
	}
	want := []string{
		"Phase B|ordered||ready|",
		"Phase B|nested ordered|Phase B/ordered|done|",
		"C|starred||ready|continued line",
	}
	if !slices.Equal(got, want) {
		t.Errorf("items\n%q\nwant\n%q", got, want)
	}
}

// Issue 32 item 8: invalid UTF-8 is refused naming file and line, a byte
// order mark is read, an over-long line is named with the limit.
func TestImportInputRules(t *testing.T) {
	bom := "\xef\xbb\xbf"
	if items, _, err := importer.ReadBeads("b.jsonl", strings.NewReader(bom+`{"id":"a","title":"t"}`+"\n"), importer.ReadOptions{}); err != nil || len(items) != 1 {
		t.Errorf("beads with a BOM: %v %v", items, err)
	}
	if items, _, err := importer.ReadGithub("g.json", strings.NewReader(bom+`[{"number":1,"title":"t"}]`)); err != nil || len(items) != 1 {
		t.Errorf("github with a BOM: %v %v", items, err)
	}
	if items, _, err := mdplan.ReadMarkdown("p.md", strings.NewReader(bom+"- [ ] t\n")); err != nil || len(items) != 1 {
		t.Errorf("markdown with a BOM: %v %v", items, err)
	}
	bad := "{\"id\":\"a\",\"title\":\"t\"}\n{\"id\":\"b\",\"title\":\"caf\xe9\"}\n"
	_, _, err := importer.ReadBeads("b.jsonl", strings.NewReader(bad), importer.ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "b.jsonl:2: byte 23 of the line (0xe9) is not UTF-8") {
		t.Errorf("beads with Latin-1: %v", err)
	}
	_, _, err = importer.ReadGithub("g.json", strings.NewReader("[\n{\"number\":1,\"title\":\"caf\xe9\"}]"))
	if err == nil || !strings.Contains(err.Error(), "g.json:2: byte 25 of the line (0xe9) is not UTF-8") {
		t.Errorf("github with Latin-1: %v", err)
	}
	_, _, err = mdplan.ReadMarkdown("p.md", strings.NewReader("# x\n- [ ] caf\xe9\n"))
	if err == nil || !strings.Contains(err.Error(), "p.md:2: ") || !strings.Contains(err.Error(), "not UTF-8") {
		t.Errorf("markdown with Latin-1: %v", err)
	}
	long := `{"id":"a","title":"t"}` + "\n" + `{"id":"b","title":"t","description":"` + strings.Repeat("x", importer.MaxLineBytes) + "\"}\n"
	_, _, err = importer.ReadBeads("b.jsonl", strings.NewReader(long), importer.ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "b.jsonl:2: the line is longer than 16777216 bytes (16 MiB)") {
		t.Errorf("beads with a long line: %v", err)
	}
}

// TestLongTextKept: a note over the ledger's 4 KiB and a body over its
// 64 KiB never stop an import; the text is kept whole, in order.
func TestLongTextKept(t *testing.T) {
	note := strings.Repeat("ünïcödé line\n", 700)          // ~10 KB
	body := strings.Repeat("body text 0123456789\n", 4000) // ~84 KB
	line, _ := json.Marshal(map[string]any{"id": "a", "title": "t", "description": body, "notes": note,
		"comments": []map[string]any{{"author": "x", "text": note, "created_at": "2025-01-01T00:00:00Z"}}})
	items, rep, err := importer.ReadBeads("b.jsonl", bytes.NewReader(line), importer.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := importInto(t, t.TempDir(), items, rep, importer.Options{Source: "beads"})[0]
	var all strings.Builder
	all.WriteString(c.Body)
	var comment strings.Builder
	for _, n := range c.Notes {
		text := n.Text[strings.Index(n.Text, ") ")+2:] // drop the "(part i/n) " marker
		if n.Author == "x" {
			comment.WriteString(text)
		} else {
			all.WriteString(text)
		}
	}
	if want := body + "\n\n## Notes\n\n" + note; all.String() != want {
		t.Errorf("body and notes: %d bytes back, %d in", all.Len(), len(want))
	}
	if comment.String() != note {
		t.Errorf("comment: %d bytes back, %d in", comment.Len(), len(note))
	}
}
