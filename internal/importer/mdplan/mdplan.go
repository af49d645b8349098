// Package mdplan reads a markdown plan's task lists as import items,
// through a CommonMark parser (goldmark). It is apart from package
// importer because the parser's initialisation is costly: only bl-git
// links it, and the lean bl hands bl import --from markdown over.
package mdplan

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"

	"github.com/bl-backlog/bl/internal/importer"
	"github.com/bl-backlog/bl/ledger"
)

// MarkdownKey is the idempotency key of the card a checklist item
// becomes: the file's name, the heading it is under, and the titles from
// its top-level item down, so moving the file keeps the cards but editing
// an item's text makes a new one.
func MarkdownKey(file, phase string, path []string) string {
	return "markdown:" + filepath.Base(file) + ":" + strings.Join(append([]string{phase}, path...), "/")
}

// markdown is a CommonMark parser with GitHub's task lists.
var markdown = goldmark.New(goldmark.WithExtensions(extension.TaskList))

// ReadMarkdown reads a plan through a CommonMark parser: a task list item
// ("- [ ] title", "1. [x] title", any list marker) is a card, checked
// ones done; a task item inside another is its child (parent); the
// nearest heading above (ATX "# M1" or setext "M1" over "===") is the
// phase. Code (``` and ~~~ fences, indented blocks) and prose are not
// cards. An item's further lines are its body.
func ReadMarkdown(file string, r io.Reader) ([]importer.Item, *importer.Report, error) {
	src, err := importer.ReadAll(file, r)
	if err != nil {
		return nil, nil, err
	}
	rep := &importer.Report{}
	doc := markdown.Parser().Parse(text.NewReader(src))
	var (
		items []importer.Item
		phase string
		keys  = map[ast.Node]string{}   // task list item → its key
		paths = map[ast.Node][]string{} // task list item → titles from the top
	)
	err = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			phase = strings.TrimSpace(string(blockText(n, src)))
			return ast.WalkSkipChildren, nil
		case *ast.ListItem:
			box, block := taskBox(n)
			if box == nil {
				return ast.WalkContinue, nil
			}
			lines := block.Lines()
			first := lines.At(0)
			line := bytes.Count(src[:first.Start], []byte("\n")) + 1
			raw := string(blockText(block, src))
			title, body, _ := strings.Cut(raw, "\n")
			title = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(title), " "))
			title = strings.TrimSpace(stripBox(title))
			if title == "" {
				return ast.WalkStop, &importer.Error{File: file, Line: line, Msg: "a task list item with no text"}
			}
			it := importer.Item{Line: line, Title: title, Body: strings.TrimSpace(body), Phase: phase, SourceID: fmt.Sprintf("line %d", line), Status: ledger.StatusReady}
			if box.IsChecked {
				it.Status, it.CloseNote = ledger.StatusDone, "checked in "+filepath.Base(file)
				rep.Kept.Add("checked items → done")
			} else {
				rep.Kept.Add("unchecked items → ready")
			}
			var path []string
			for p := n.Parent(); p != nil; p = p.Parent() {
				if k, ok := keys[p]; ok {
					it.Parent, path = k, paths[p]
					rep.Kept.Add("items nested in an item → parent")
					break
				}
			}
			path = append(append([]string(nil), path...), title)
			it.Key = MarkdownKey(file, phase, path)
			keys[n], paths[n] = it.Key, path
			if phase != "" {
				rep.Kept.Add("items under a heading → phase")
			}
			importer.Fit(&it, rep)
			items = append(items, it)
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		return nil, nil, err
	}
	rep.Kept.First("task list items → cards", len(items))
	return items, rep, importer.Check(file, items)
}

// taskBox is the checkbox of a task list item and the block holding it,
// or nil for an item that is not a task.
func taskBox(li *ast.ListItem) (*extast.TaskCheckBox, ast.Node) {
	block := li.FirstChild()
	if block == nil || block.Lines().Len() == 0 {
		return nil, nil
	}
	box, _ := block.FirstChild().(*extast.TaskCheckBox)
	return box, block
}

// stripBox drops the "[ ]" / "[x]" the raw text of a task item starts
// with.
func stripBox(s string) string {
	if len(s) >= 3 && s[0] == '[' && s[2] == ']' {
		return s[3:]
	}
	return s
}

// blockText is the source text of a block's lines.
func blockText(n ast.Node, src []byte) []byte {
	var b bytes.Buffer
	lines := n.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		b.Write(seg.Value(src))
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}
