package importer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/ledger"
)

// githubIssue is one issue in any of the shapes GitHub's tools print: the
// REST API's (gh api repos/O/R/issues, snake_case, comments a count), gh
// issue list --json's (camelCase, comments a list) and the GraphQL
// responses gh reads (lists as {"nodes": [...]}). The members that differ
// by shape are read by githubUsers, githubNames and githubComments.
type githubIssue struct {
	Number       *int            `json:"number"`
	Title        string          `json:"title"`
	Body         string          `json:"body"`
	State        string          `json:"state"`
	StateReason  string          `json:"state_reason"`
	StateReason2 string          `json:"stateReason"`
	URL          string          `json:"url"`
	HTMLURL      string          `json:"html_url"`
	User         *githubUser     `json:"user"`
	Author       *githubUser     `json:"author"`
	Labels       json.RawMessage `json:"labels"`
	Assignee     *githubUser     `json:"assignee"`
	Assignees    json.RawMessage `json:"assignees"`
	Milestone    *struct {
		Title string `json:"title"`
	} `json:"milestone"`
	Comments    json.RawMessage `json:"comments"`
	CreatedAt   *time.Time      `json:"created_at"`
	CreatedAt2  *time.Time      `json:"createdAt"`
	UpdatedAt   *time.Time      `json:"updated_at"`
	UpdatedAt2  *time.Time      `json:"updatedAt"`
	ClosedAt    *time.Time      `json:"closed_at"`
	ClosedAt2   *time.Time      `json:"closedAt"`
	PullRequest json.RawMessage `json:"pull_request"`
}

// githubMapped are the members read into the card; the others are
// counted as left out, by name.
var githubMapped = []string{"number", "title", "body", "state", "state_reason", "stateReason", "url", "html_url",
	"user", "author", "labels", "assignee", "assignees", "milestone", "comments", "created_at", "createdAt",
	"updated_at", "updatedAt", "closed_at", "closedAt", "pull_request"}

type githubUser struct {
	Login string `json:"login"`
}

type githubComment struct {
	Author     *githubUser `json:"author"`
	User       *githubUser `json:"user"`
	Body       string      `json:"body"`
	CreatedAt  *time.Time  `json:"createdAt"`
	CreatedAt2 *time.Time  `json:"created_at"`
}

// GithubKey is the idempotency key of the card an issue becomes: its web
// URL, which holds the repository and the number, in every shape.
func GithubKey(url string, number int) string {
	if url == "" {
		return "github:#" + strconv.Itoa(number)
	}
	return "github:" + url
}

// MilestoneLabel is the label a GitHub milestone becomes.
const MilestoneLabel = "milestone:"

// ReadGithub reads GitHub issues: a JSON array of them (gh issue list
// --json, or one page of the REST API), a stream of arrays (gh api
// --paginate), one issue, or a GraphQL response holding them.
func ReadGithub(file string, r io.Reader) ([]Item, *Report, error) {
	data, err := ReadAll(file, r)
	if err != nil {
		return nil, nil, err
	}
	rep := &Report{}
	var items []Item
	dec := json.NewDecoder(bytes.NewReader(data))
	values := 0
	for {
		start := skipSpace(data, dec.InputOffset())
		var v json.RawMessage
		if err := dec.Decode(&v); err == io.EOF {
			break
		} else if err != nil {
			return nil, nil, &Error{file, lineAt(data, errOffset(err, start)), fmt.Sprintf("not GitHub issues JSON: %v", err)}
		}
		values++
		got, err := githubValue(file, data, start, v, rep)
		if err != nil {
			return nil, nil, err
		}
		items = append(items, got...)
	}
	if values == 0 {
		return nil, nil, &Error{file, 0, "empty: no GitHub issues"}
	}
	rep.Kept.First("issues → cards", len(items))
	return items, rep, Check(file, items)
}

// githubValue reads one top-level JSON value starting at byte start.
func githubValue(file string, data []byte, start int64, v json.RawMessage, rep *Report) ([]Item, error) {
	switch v[0] {
	case '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(v, &elems); err != nil {
			return nil, &Error{file, lineAt(data, start), fmt.Sprintf("not a list of GitHub issues: %v", err)}
		}
		var out []Item
		off := start
		for _, e := range elems {
			// Each element's line: find it after the previous one.
			if i := bytes.Index(data[off:], e); i >= 0 {
				off += int64(i)
			}
			if len(e) > 0 && e[0] == '[' { // gh api --paginate --slurp: an array of pages
				got, err := githubValue(file, data, off, e, rep)
				if err != nil {
					return nil, err
				}
				out = append(out, got...)
				off += int64(len(e))
				continue
			}
			it, ok, err := githubItem(file, lineAt(data, off), e, rep)
			if err != nil {
				return nil, err
			}
			off += int64(len(e))
			if ok {
				out = append(out, it)
			}
		}
		return out, nil
	case '{':
		var probe struct {
			Data   json.RawMessage `json:"data"`
			Number *int            `json:"number"`
		}
		if err := json.Unmarshal(v, &probe); err != nil {
			return nil, &Error{file, lineAt(data, start), fmt.Sprintf("not a GitHub issue: %v", err)}
		}
		if probe.Data != nil {
			nodes := graphqlIssues(probe.Data)
			if nodes == nil {
				return nil, &Error{file, lineAt(data, start), "a GraphQL response with no issues in it (data.repository.issues, data.search or data.repository.issue)"}
			}
			return githubValue(file, data, start, nodes, rep)
		}
		it, ok, err := githubItem(file, lineAt(data, start), v, rep)
		if err != nil || !ok {
			return nil, err
		}
		return []Item{it}, nil
	}
	return nil, &Error{file, lineAt(data, start), "not GitHub issues: expected a JSON array of issues (gh issue list --json ..., gh api --paginate repos/O/R/issues)"}
}

// graphqlIssues finds the issues of a GraphQL response gh reads, as a
// JSON array.
func graphqlIssues(data json.RawMessage) json.RawMessage {
	var d struct {
		Repository struct {
			Issues *struct {
				Nodes json.RawMessage `json:"nodes"`
			} `json:"issues"`
			Issue json.RawMessage `json:"issue"`
		} `json:"repository"`
		Search *struct {
			Nodes json.RawMessage `json:"nodes"`
		} `json:"search"`
	}
	if json.Unmarshal(data, &d) != nil {
		return nil
	}
	switch {
	case d.Repository.Issues != nil:
		return d.Repository.Issues.Nodes
	case d.Search != nil:
		return d.Search.Nodes
	case d.Repository.Issue != nil:
		return append(append(json.RawMessage("["), d.Repository.Issue...), ']')
	}
	return nil
}

func githubItem(file string, line int, raw json.RawMessage, rep *Report) (Item, bool, error) {
	var gi githubIssue
	if err := json.Unmarshal(raw, &gi); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return Item{}, false, &Error{file, line, fmt.Sprintf("not a GitHub issue: %s is a JSON %s here", te.Field, te.Value)}
		}
		return Item{}, false, &Error{file, line, fmt.Sprintf("not a GitHub issue: %v", err)}
	}
	if gi.Number == nil {
		return Item{}, false, &Error{file, line, "the issue has no number (gh issue list needs --json number,title,...)"}
	}
	n := *gi.Number
	if gi.PullRequest != nil && string(gi.PullRequest) != "null" {
		rep.LeftOut.Add("pull requests skipped (the REST issues endpoint lists them too)")
		return Item{}, false, nil
	}
	if strings.TrimSpace(gi.Title) == "" {
		return Item{}, false, &Error{file, line, fmt.Sprintf("issue #%d has no title", n)}
	}
	url := gi.HTMLURL
	if url == "" && !strings.Contains(gi.URL, "api.github.com") {
		url = gi.URL
	}
	if url != "" && !strings.HasSuffix(url, "/"+strconv.Itoa(n)) {
		url += "#" + strconv.Itoa(n) // not an issue's own URL: the number keeps it apart
	}
	var members map[string]json.RawMessage
	_ = json.Unmarshal(raw, &members)
	for _, k := range slices.Sorted(maps.Keys(members)) {
		if !slices.Contains(githubMapped, k) && string(members[k]) != "null" {
			rep.LeftOut.Add(k + ": not imported")
		}
	}
	it := Item{Key: GithubKey(url, n), SourceID: "#" + strconv.Itoa(n), CardID: "gh-" + strconv.Itoa(n), Line: line,
		Title: gi.Title, Body: gi.Body, CreatedAt: first(gi.CreatedAt, gi.CreatedAt2), UpdatedAt: first(gi.UpdatedAt, gi.UpdatedAt2)}
	kept := func(ok bool, what string) {
		if ok {
			rep.Kept.Add(what)
		}
	}
	kept(gi.Body != "", "body → body")
	kept(it.CreatedAt != nil, "created_at → source_created_at")
	kept(it.UpdatedAt != nil, "updated_at → source_updated_at")
	if u := first(gi.User, gi.Author); u != nil && u.Login != "" {
		it.CreatedBy = u.Login
		rep.Kept.Add("author → actor of the create (bl log)")
	}
	labels, err := githubNames(gi.Labels, "name")
	if err != nil {
		return Item{}, false, &Error{file, line, fmt.Sprintf("issue #%d: labels: %v", n, err)}
	}
	for _, l := range labels {
		it.Labels = appendNew(it.Labels, l)
		rep.Kept.Add("labels → labels")
	}
	if gi.Milestone != nil && gi.Milestone.Title != "" {
		it.Labels = appendNew(it.Labels, MilestoneLabel+gi.Milestone.Title)
		rep.Kept.Add("milestone → label " + MilestoneLabel + "TITLE")
	}
	assignees, err := githubNames(gi.Assignees, "login")
	if err != nil {
		return Item{}, false, &Error{file, line, fmt.Sprintf("issue #%d: assignees: %v", n, err)}
	}
	if len(assignees) == 0 && gi.Assignee != nil && gi.Assignee.Login != "" {
		assignees = []string{gi.Assignee.Login}
	}
	if len(assignees) > 0 {
		it.Assignee = assignees[0]
		for _, a := range assignees[1:] {
			it.Labels = appendNew(it.Labels, AssigneeLabel+a)
			rep.Kept.Add("assignees past the first → label " + AssigneeLabel + "NAME")
		}
	}
	reason := strings.ToLower(first(gi.StateReason, gi.StateReason2))
	switch strings.ToUpper(gi.State) {
	case "OPEN", "":
		it.Status = ledger.StatusReady
		rep.Kept.Add("state open → ready")
		kept(reason == "reopened", "state_reason reopened → (open)")
	case "CLOSED":
		it.Status, it.CloseNote = ledger.StatusDone, "closed on GitHub"
		if reason != "" {
			it.CloseNote += " (" + strings.ReplaceAll(reason, "_", " ") + ")"
			rep.Kept.Add("state_reason → close note")
		}
		it.ClosedAt = first(gi.ClosedAt, gi.ClosedAt2)
		rep.Kept.Add("state closed → done")
		kept(it.ClosedAt != nil, "closed_at → source_closed_at")
	default:
		return Item{}, false, &Error{file, line, fmt.Sprintf("issue #%d has state %q, not open or closed", n, gi.State)}
	}
	comments, count, err := githubComments(gi.Comments)
	if err != nil {
		return Item{}, false, &Error{file, line, fmt.Sprintf("issue #%d: comments: %v", n, err)}
	}
	rep.LeftOut.AddN("comments not in the file, only counted (use gh issue list --json comments)", count)
	for _, c := range comments {
		if strings.TrimSpace(c.Body) == "" {
			continue
		}
		var who string
		if u := first(c.Author, c.User); u != nil {
			who = u.Login
		}
		it.Notes = append(it.Notes, Note{Author: who, Text: c.Body, At: first(c.CreatedAt, c.CreatedAt2)})
		rep.Kept.Add("comments → notes, with author and source time")
	}
	Fit(&it, rep)
	return it, true, nil
}

// githubNames reads a list of names: ["a"], [{"name": "a"}] or
// {"nodes": [{"name": "a"}]}, field naming the member.
func githubNames(raw json.RawMessage, field string) ([]string, error) {
	raw = nodes(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, err
	}
	var out []string
	for _, e := range list {
		var s string
		if json.Unmarshal(e, &s) != nil {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(e, &m); err != nil {
				return nil, err
			}
			_ = json.Unmarshal(m[field], &s)
		}
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// githubComments reads comments as a list (gh --json, GraphQL) or the
// count the REST API gives instead.
func githubComments(raw json.RawMessage) (list []githubComment, count int, err error) {
	raw = nodes(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, 0, nil
	}
	switch raw[0] {
	case '{': // a GraphQL connection with no nodes asked for
		var c struct {
			TotalCount int `json:"totalCount"`
		}
		err = json.Unmarshal(raw, &c)
		return nil, c.TotalCount, err
	case '[':
	default:
		err = json.Unmarshal(raw, &count)
		return nil, count, err
	}
	err = json.Unmarshal(raw, &list)
	return list, 0, err
}

// nodes unwraps a GraphQL connection ({"nodes": [...]}).
func nodes(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return raw
	}
	var c struct {
		Nodes json.RawMessage `json:"nodes"`
	}
	if json.Unmarshal(raw, &c) == nil && c.Nodes != nil {
		return c.Nodes
	}
	return raw
}

func first[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}

// lineAt is the line number of byte offset off in data.
func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return bytes.Count(data[:off], []byte("\n")) + 1
}

func skipSpace(data []byte, off int64) int64 {
	for off < int64(len(data)) && strings.IndexByte(" \t\r\n", data[off]) >= 0 {
		off++
	}
	return off
}

func errOffset(err error, def int64) int64 {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return se.Offset
	}
	return def
}
