package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/bl-backlog/bl/internal/gitwork"
	"github.com/bl-backlog/bl/ledger"
)

// PathsCmd checks files against the paths live claims hold.
type PathsCmd struct {
	Action string   `arg:"" enum:"check,list" help:"check: refuse files another owner holds; list: the paths held now."`
	Files  []string `arg:"" optional:"" placeholder:"FILE" help:"Files to check, from the repository root (default: the files staged for commit)."`
	Owner  string   `help:"Your lease owner: files your own claims hold pass (default: the actor)."`
}

func (PathsCmd) Help() string {
	return `A card may name the files its work touches (bl create --paths GLOB). While
it is claimed under a live lease, or in review, those paths are held: bl
claim passes over cards whose paths overlap them, and bl paths check
refuses files held by another owner's card, naming card and owner (exit
4, code paths_held). With no files it checks the files staged for the next
commit, so it works as a git pre-commit hook:

    #!/bin/sh
    exec bl paths check --owner "$BL_OWNER"

Globs are from the repository root: '*' stays within a path segment, '**'
spans any number of them, and a glob whose last segment has no wildcard
also covers everything below it (src/lexer holds src/lexer/scan.go).

Examples:

    bl paths check src/lexer/scan.go
    bl paths check --owner agent-2
    bl paths list --json` + exitCodesHelp
}

// pathHit is a file another owner's card holds.
type pathHit struct {
	File  string        `json:"file"`
	Card  string        `json:"card"`
	Owner string        `json:"owner,omitempty"`
	State ledger.Status `json:"status"`
}

func (c *PathsCmd) Run(a *App) error {
	b, err := a.Open()
	if err != nil {
		return err
	}
	holds, err := b.PathHolds()
	if err != nil {
		return err
	}
	if holds == nil {
		holds = []ledger.Hold{}
	}
	if c.Action == "list" {
		return a.emit(holds, func(w io.Writer) {
			if len(holds) == 0 {
				fmt.Fprintln(w, "no paths held")
			}
			for _, h := range holds {
				fmt.Fprintf(w, "%s  %s (%s)  %s\n", h.Card, text(dash(h.Owner)), h.Status, text(strings.Join(h.Paths, " ")))
			}
		})
	}
	files := c.Files
	if len(files) == 0 {
		if files, err = gitwork.StagedFiles(a.ctx, "."); err != nil {
			return err
		}
	}
	me := a.Owner(c.Owner)
	hits := []pathHit{}
	for _, f := range files {
		for _, h := range holds {
			if h.Owner == me {
				continue
			}
			if held := slicesAny(h.Paths, func(g string) bool { return ledger.PathMatches(g, f) }); held {
				hits = append(hits, pathHit{File: f, Card: h.Card, Owner: h.Owner, State: h.Status})
				break
			}
		}
	}
	if len(hits) == 0 {
		return a.emit(hits, func(w io.Writer) { fmt.Fprintf(w, "%d files checked: none held by another owner\n", len(files)) })
	}
	if a.JSON {
		if err := a.emit(hits, nil); err != nil {
			return err
		}
	}
	var lines []string
	for _, h := range hits {
		lines = append(lines, fmt.Sprintf("%s is held by %s (%s, %s)", text(h.File), h.Card, text(dash(h.Owner)), h.State))
	}
	return ledger.Errorf(ledger.ErrPathsHeld, "%s; commit it once that card is done or released, or coordinate with its owner", strings.Join(lines, "; "))
}

func slicesAny(list []string, f func(string) bool) bool {
	for _, s := range list {
		if f(s) {
			return true
		}
	}
	return false
}
