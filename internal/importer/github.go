package importer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/ledger"
)

// githubIssue is one element of
// gh issue list --state all --json number,title,body,labels,state,assignees,url,comments.
type githubIssue struct {
	Number *int   `json:"number"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	State  string `json:"state"`
	URL    string `json:"url"`
	Labels []struct {
		Name string `json:"name"`
	} `json:"labels"`
	Assignees []struct {
		Login string `json:"login"`
	} `json:"assignees"`
	Comments []struct {
		Author struct {
			Login string `json:"login"`
		} `json:"author"`
		Body string `json:"body"`
	} `json:"comments"`
}

// GithubKey is the idempotency key of the card an issue becomes: its URL,
// which holds the repository and the number.
func GithubKey(url string, number int) string {
	if url == "" {
		return "github:#" + strconv.Itoa(number)
	}
	return "github:" + url
}

// ReadGithub reads the JSON array gh issue list --json prints.
func ReadGithub(file string, r io.Reader) ([]Item, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, &Error{file, 0, err.Error()}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, &Error{file, lineAt(data, dec.InputOffset()), "not the output of gh issue list --json: it is a JSON array of issues"}
	}
	var items []Item
	for dec.More() {
		line := lineAt(data, dec.InputOffset()+1)
		var gi githubIssue
		if err := dec.Decode(&gi); err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				line = lineAt(data, se.Offset)
			}
			return nil, &Error{file, line, fmt.Sprintf("not a GitHub issue: %v", err)}
		}
		if gi.Number == nil {
			return nil, &Error{file, line, "the issue has no number (run gh issue list with --json number,title,...)"}
		}
		if strings.TrimSpace(gi.Title) == "" {
			return nil, &Error{file, line, fmt.Sprintf("issue #%d has no title", *gi.Number)}
		}
		it := Item{Key: GithubKey(gi.URL, *gi.Number), SourceID: "#" + strconv.Itoa(*gi.Number), Line: line, Title: gi.Title, Body: gi.Body}
		for _, l := range gi.Labels {
			it.Labels = appendNew(it.Labels, l.Name)
		}
		switch strings.ToUpper(gi.State) {
		case "OPEN", "":
			it.Status = ledger.StatusReady
		case "CLOSED":
			it.Status, it.CloseNote = ledger.StatusDone, "closed on GitHub"
		default:
			return nil, &Error{file, line, fmt.Sprintf("issue #%d has state %q, not OPEN or CLOSED", *gi.Number, gi.State)}
		}
		for _, c := range gi.Comments {
			if strings.TrimSpace(c.Body) != "" {
				it.Notes = append(it.Notes, Note{Author: c.Author.Login, Text: c.Body})
			}
		}
		items = append(items, it)
	}
	if _, err := dec.Token(); err != nil {
		return nil, &Error{file, lineAt(data, dec.InputOffset()), fmt.Sprintf("the issue list does not end: %v", err)}
	}
	return items, check(file, items)
}

// lineAt is the line number of byte offset off in data.
func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return bytes.Count(data[:off], []byte("\n")) + 1
}
