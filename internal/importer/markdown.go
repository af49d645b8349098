package importer

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/bl-backlog/bl/ledger"
)

// Compiled on first use: bl links this package, and every call would pay
// for them at start-up.
var (
	checkboxRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\s*)[-*+] \[(.)\](.*)$`) })
	headingRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`) })
)

// MarkdownKey is the idempotency key of the card a checklist item
// becomes: the file's name, the heading it is under, and the titles from
// its top-level item down, so moving the file keeps the cards but editing
// an item's text makes a new one.
func MarkdownKey(file, phase string, path []string) string {
	return "markdown:" + filepath.Base(file) + ":" + strings.Join(append([]string{phase}, path...), "/")
}

// ReadMarkdown reads a checklist plan: "- [ ] title" is a card, "- [x]"
// a done card, an item indented under another is its child (parent), and
// the nearest heading above is the phase. Other lines are prose and are
// skipped.
func ReadMarkdown(file string, r io.Reader) ([]Item, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	type open struct {
		indent int
		title  string
		key    string
	}
	var (
		items []Item
		phase string
		stack []open
		fence bool
	)
	for line := 1; sc.Scan(); line++ {
		l := strings.TrimRight(sc.Text(), " \t\r")
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		if m := headingRe().FindStringSubmatch(l); m != nil {
			phase, stack = m[1], nil
			continue
		}
		m := checkboxRe().FindStringSubmatch(l)
		if m == nil {
			continue
		}
		indent := len(strings.ReplaceAll(m[1], "\t", "    "))
		title := strings.TrimSpace(m[3])
		if title == "" {
			return nil, &Error{file, line, "a checklist item with no text"}
		}
		it := Item{Line: line, Title: title, Phase: phase, SourceID: fmt.Sprintf("line %d", line)}
		switch m[2] {
		case " ":
			it.Status = ledger.StatusReady
		case "x", "X":
			it.Status, it.CloseNote = ledger.StatusDone, "checked in "+filepath.Base(file)
		default:
			return nil, &Error{file, line, fmt.Sprintf("checkbox [%s]: a checklist item is [ ] or [x]", m[2])}
		}
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		var path []string
		for _, o := range stack {
			path = append(path, o.title)
		}
		if len(stack) > 0 {
			it.Parent = stack[len(stack)-1].key
		}
		it.Key = MarkdownKey(file, phase, append(path, title))
		stack = append(stack, open{indent, title, it.Key})
		items = append(items, it)
	}
	if err := sc.Err(); err != nil {
		return nil, &Error{file, 0, err.Error()}
	}
	return items, check(file, items)
}
